"""compare_eval.py EXPECTED.json EXPECTED_SAMPLES.jsonl RESULTS.json SAMPLES.jsonl [REL_TOL]
Exit 1 unless shardtune eval's results and samples agree with eval_fixtures.py's: accuracies
and exact match (and their standard errors) exactly, log-likelihoods and perplexities within
REL_TOL (float32 against float64), generated text exactly. Both may also be two shardtune runs
(results.json + samples), e.g. 1 rank against 3."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import tolerance_log  # noqa: E402


def load_samples(path):
    samples = {}
    for line in open(path):
        if line.strip():
            sample = json.loads(line)
            samples[(sample["task"], sample["doc"])] = sample
    return samples


def metrics_of(results):
    return {task: r.get("metrics", r) for task, r in results.get("results", results).items()}


def close(a, b, tol):
    return abs(a - b) <= tol * max(1.0, abs(a))


def main():
    expected, got = metrics_of(json.load(open(sys.argv[1]))), metrics_of(json.load(open(sys.argv[3])))
    expected_samples, got_samples = load_samples(sys.argv[2]), load_samples(sys.argv[4])
    tol = float(sys.argv[5]) if len(sys.argv) > 5 else 1e-4
    problems, worst = [], 0.0
    for task, metrics in expected.items():
        for name, metric in metrics.items():
            mine = got.get(task, {}).get(name)
            if mine is None:
                problems.append("%s %s: missing" % (task, name))
                continue
            exact = name in ("acc", "acc_norm", "acc_bytes", "exact_match")
            for field in ("value", "stderr"):
                a, b = metric[field], mine[field]
                if (a is None) != (b is None):
                    problems.append("%s %s %s: %r != %r" % (task, name, field, b, a))
                elif a is not None and not close(a, b, 1e-12 if exact else tol):
                    problems.append("%s %s %s: %r != %r" % (task, name, field, b, a))
                elif a is not None and not exact:
                    worst = max(worst, abs(a - b) / max(1.0, abs(a)))
    for key, sample in expected_samples.items():
        mine = got_samples.get(key)
        if mine is None:
            problems.append("%s doc %d: no sample" % key)
            continue
        for field in ("loglikelihoods", "loglikelihood"):
            if field in sample:
                values = sample[field] if isinstance(sample[field], list) else [sample[field]]
                others = mine[field] if isinstance(mine[field], list) else [mine[field]]
                for a, b in zip(values, others):
                    worst = max(worst, abs(a - b) / max(1.0, abs(a)))
                    if not close(a, b, tol):
                        problems.append("%s doc %d %s: %r != %r" % (key + (field, b, a)))
        for field in ("output", "filtered"):
            if field in sample and sample[field] != mine.get(field):
                problems.append("%s doc %d %s: %r != %r" % (key + (field, mine.get(field), sample[field])))
    print("compare_eval: %d metrics, %d samples, worst relative difference %.3g" %
          (sum(len(m) for m in expected.values()), len(expected_samples), worst))
    tolerance_log.record("eval log-likelihoods", os.path.basename(sys.argv[1]), os.path.basename(sys.argv[3]), worst,
                         tol)
    for problem in problems:
        print("  " + problem)
    sys.exit(1 if problems else 0)


main()
