"""One of TRL's oracle runs (trl_dpo.py, trl_sft.py, trl_kto.py, trl_rm.py) in fp32 and then in
float64, in one process: importing TRL costs more than a tiny run does, so the judge's run shares
the oracle's import. The float64 run is exact: no value of it is rounded to float32
(exact_float64.py), though transformers and TRL keep some in float32 otherwise. Each run is the
script's own main() on its own command line (models, trainer and seed made anew), as two processes
would run them.

usage: trl_both_precisions.py SCRIPT.py MODEL DATA FP32_LOG FLOAT64_LOG WORK [options...]
       (WORK-fp32 and WORK-float64 are the two runs' --work folders)

"""
import contextlib
import importlib
import os
import sys

from exact_float64 import exact_float64


def main():
    script, model, data, fp32_log, float64_log, work = sys.argv[1:7]
    options = sys.argv[7:]
    run = importlib.import_module(os.path.splitext(os.path.basename(script))[0]).main
    for log, precision, wide in [(fp32_log, "fp32", []), (float64_log, "float64", ["--float64"])]:
        sys.argv = [script, model, data, log, *options, *wide, "--work", f"{work}-{precision}"]
        print(f"trl_both_precisions.py: {precision} run", flush=True)
        # The judge's run without float32 islands (exact_float64.py), the model built inside it.
        with exact_float64() if wide else contextlib.nullcontext():
            run()


if __name__ == "__main__":
    main()
