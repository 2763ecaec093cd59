"""Random chat-template-like Jinja over the constructs lib/jinja/README.md lists: literals of every
kind, variables of every kind (none and undefined included), operators, filters and tests applied
to every kind of value, methods, loops with loop variables, macros with defaults and caller,
namespaces, set blocks, filter blocks and whitespace control. `case(rng)` gives one template and
its variables; jinja_differential.py renders thousands with lib/jinja and with Jinja2.

Left out on purpose, as README.md refuses them by name or lets them differ: include / import /
extends / block / with / do, *args and **kwargs, recursive loops, `%` string formatting, case
mapping of non-ASCII letters (every string here is ASCII), and printing what Python prints as an
object's address (a generator, dict.items(), range()): those are always passed through `| list`.
Numbers stay small, but a filter's count can still make a power leave int64 (8 ** (1 | center |
count)); jinja_differential.py holds Jinja2 to lib/jinja's int64 bound there."""
import random

VARIABLES = {
    "s": "Hello World", "t": "  a,b ,c  ", "e": "", "n": 3, "k": -2, "f": 2.5, "g": 0.1, "b": True, "c": False,
    "z": None, "l": [3, 1, 2], "m": ["b", "A", "c", "a"], "mix": [1, "a", None, True, 2.5], "empty": [],
    "d": {"a": 1, "b": [1, 2], "c": None, "k": "v"}, "nest": {"x": {"y": [{"z": 1}, {"z": 2}]}},
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                 {"role": "assistant", "content": "Hello!", "tool_calls": None},
                 {"role": "assistant", "content": "", "tool_calls": [
                     {"type": "function", "function": {"name": "get", "arguments": {"city": "Paris"}}}]},
                 {"role": "tool", "content": "{\"t\": 20}"}],
    "tools": None, "add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>",
}
NAMES = list(VARIABLES) + ["u", "missing"]  # the last two are undefined
STRINGS = ["'a'", "\"b c\"", "''", "'x\\ny'", "'Ab'", "'<tag>'", "'a-b_c'", "'  pad '", "'user'", "'12'", "'1.5'",
           "'role'", "'content'", "'{\"k\": 1}'"]
FLOATS = ["0.5", "2.25", "-1.5", "1e-05", "100.0", "3.0", "0.1", "1e16"]
CONSTANTS = ["true", "false", "none", "True", "False", "None"]
# (filter, argument lists it takes); arguments are expressions of small depth.
FILTERS = {
    "abs": [[]], "capitalize": [[]], "center": [[], ["9"]], "count": [[]], "d": [[], ["'x'"], ["'y'", "true"]],
    "default": [[], ["0"], ["'z'", "boolean=true"]], "dictsort": [[], ["reverse=true"], ["by='value'"]],
    "first": [[]], "float": [[], ["1.5"]], "indent": [[], ["2"], ["2", "true"], ["4", "blank=true"]],
    "int": [[], ["7"]], "items": [[]], "join": [[], ["', '"], ["'-'", "attribute='role'"]], "last": [[]],
    "length": [[]], "list": [[]], "lower": [[]], "map": [["'string'"], ["'upper'"], ["attribute='role'"], ["'length'"]],
    "max": [[]], "min": [[]], "reject": [[], ["'none'"], ["'odd'"]], "rejectattr": [["'role'"], ["'role'", "'equalto'", "'user'"]],
    "replace": [["'a'", "'o'"], ["'l'", "'L'", "1"]], "reverse": [[]], "round": [[], ["1"], ["2"]],
    "select": [[], ["'string'"], ["'even'"], ["'defined'"]], "selectattr": [["'role'"], ["'role'", "'eq'", "'assistant'"]],
    "sort": [[], ["reverse=true"], ["attribute='role'"]], "string": [[]], "sum": [[], ["start=1"]], "title": [[]],
    "tojson": [[], ["indent=2"], ["sort_keys=true"], ["separators=(',', ':')"]], "trim": [[], ["'a'"]],
    "unique": [[]], "upper": [[]], "wordcount": [[]], "count": [[]], "attr": [["'a'"]],
}
GENERATORS = {"map", "select", "reject", "selectattr", "rejectattr", "reverse", "unique", "items"}  # print via | list
TESTS = {
    "boolean": [[]], "callable": [[]], "defined": [[]], "divisibleby": [["2"]], "eq": [["1"]], "equalto": [["'a'"]],
    "even": [[]], "false": [[]], "float": [[]], "ge": [["2"]], "gt": [["0"]], "in": [["[1, 2, 'a']"], ["'abc'"]],
    "integer": [[]], "iterable": [[]], "le": [["3"]], "lower": [[]], "lt": [["2"]], "mapping": [[]], "ne": [["2"]],
    "none": [[]], "number": [[]], "odd": [[]], "sameas": [["none"], ["true"]], "sequence": [[]], "string": [[]],
    "true": [[]], "undefined": [[]], "upper": [[]],
}
METHODS = {
    "str": ["strip()", "lstrip()", "rstrip(' ')", "split()", "split(',')", "rsplit(' ', 1)", "startswith('H')",
            "endswith(('d', 'x'))", "replace('l', 'L')", "upper()", "lower()", "title()", "capitalize()", "find('o')",
            "rfind('o')", "count('l')", "splitlines()", "isdigit()", "isalpha()", "isspace()", "isupper()", "islower()"],
    "dict": ["get('a')", "get('q', 5)", "keys() | list", "values() | list", "items() | list", "copy()"],
    "list": ["index(1)", "count(1)", "copy()"],
}
OPERATORS = ["+", "-", "*", "/", "//", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or"]


class Grammar:
    def __init__(self, rng):
        self.rng = rng
        self.names = list(NAMES)  # grows with loop targets, set names and macro parameters

    def pick(self, options):
        return self.rng.choice(options)

    def literal(self, depth):
        kind = self.rng.randrange(9 if depth > 0 else 5)
        if kind == 0:
            return str(self.rng.randint(-3, 12))
        if kind == 1:
            return self.pick(FLOATS)
        if kind == 2:
            return self.pick(STRINGS)
        if kind in (3, 4):
            return self.pick(CONSTANTS)
        if kind == 5:
            return "[" + ", ".join(self.expr(depth - 1) for _ in range(self.rng.randint(0, 3))) + "]"
        if kind == 6:
            items = [self.expr(depth - 1) for _ in range(self.rng.randint(1, 3))]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        keys = [self.pick([self.pick(STRINGS), str(self.rng.randint(0, 3)), self.pick(FLOATS[:3]),
                           self.pick(CONSTANTS), "(1, 'x')"]) for _ in range(self.rng.randint(0, 3))]
        return "{" + ", ".join(f"{key}: {self.expr(depth - 1)}" for key in keys) + "}"

    def primary(self, depth):
        kind = self.rng.randrange(8 if depth > 0 else 2)
        if kind == 0:
            return self.literal(depth)
        if kind == 1:
            return self.pick(self.names)
        if kind == 2:
            return self.pick(["d.a", "d.b", "d.c", "d.k", "d.zz", "nest.x.y", "messages[0].role", "messages[-1].content",
                              "messages[3].tool_calls[0].function.name", "messages[2].tool_calls", "l[0]", "l[-1]", "l[5]",
                              "s[0]", "s[::-1]", "s[1:4]", "l[1:]", "mix[::2]", "d['a']", "d[1]", "z.x", "u.v"])
        if kind == 3:
            receiver, kind_name = self.pick([("s", "str"), ("t", "str"), ("e", "str"), (self.pick(STRINGS), "str"),
                                             ("d", "dict"), ("l", "list"), ("mix", "list")])
            method = self.pick(METHODS[kind_name])
            return f"({receiver}.{method})" if "|" in method else f"{receiver}.{method}"
        if kind == 4:
            return self.pick(["range(3) | list", "range(1, n) | list", "range(5, 0, -2) | list", "dict(a=1, b=z)",
                              f"namespace(x={self.expr(depth - 1)}).x", "range(0) | list"])
        if kind == 5:
            return f"({self.expr(depth - 1)})"
        if kind == 6:
            return "-" + self.primary(depth - 1) if self.rng.random() < 0.3 else "not " + self.primary(depth - 1)
        return f"{self.primary(depth - 1)} ** {self.rng.randint(0, 3)}"

    def filtered(self, depth):
        value = self.primary(depth)
        for _ in range(self.rng.randint(1, 2)):
            name = self.pick(list(FILTERS))
            args = self.pick(FILTERS[name])
            value = f"{value} | {name}" + (f"({', '.join(args)})" if args else "")
            if name in GENERATORS:
                value += " | list"
        return value

    def tested(self, depth):
        name = self.pick(list(TESTS))
        args = self.pick(TESTS[name])
        negate = "not " if self.rng.random() < 0.3 else ""
        arg_text = f"({', '.join(args)})" if args and self.rng.random() < 0.5 else (" " + args[0] if args else "")
        return f"{self.primary(depth)} is {negate}{name}{arg_text}"

    def expr(self, depth=2):
        kind = self.rng.randrange(6 if depth > 0 else 2)
        if kind in (0, 1):
            return self.primary(depth)
        if kind == 2:
            return self.filtered(depth - 1)
        if kind == 3:
            return self.tested(depth - 1)
        if kind == 4:
            return f"{self.primary(depth - 1)} {self.pick(OPERATORS)} {self.primary(depth - 1)}"
        return f"{self.expr(depth - 1)} if {self.expr(depth - 1)} else {self.expr(depth - 1)}"

    def tag(self, body):
        left = self.pick(["{%", "{%-", "{%", "{%+"])
        right = self.pick(["%}", "-%}", "%}"])
        return f"{left} {body} {right}"

    def text(self):
        return self.pick(["x", " ", "\n", "  \n", "<|im_start|>user\n", "A", " | ", "\n\n", "\t-"])

    def block(self, depth):
        return "".join(self.statement(depth) for _ in range(self.rng.randint(1, 3)))

    def statement(self, depth):
        kind = self.rng.randrange(10 if depth > 0 else 2)
        if kind == 0:
            return self.text()
        if kind == 1:
            left = self.pick(["{{", "{{-", "{{"])
            right = self.pick(["}}", "-}}", "}}"])
            return f"{left} {self.expr()} {right}"
        if kind == 2:
            out = self.tag(f"if {self.expr()}") + self.block(depth - 1)
            if self.rng.random() < 0.4:
                out += self.tag(f"elif {self.expr()}") + self.block(depth - 1)
            if self.rng.random() < 0.4:
                out += self.tag("else") + self.block(depth - 1)
            return out + self.tag("endif")
        if kind == 3:
            source = self.pick(["l", "m", "mix", "messages", "empty", "d", "s", "z", "u", "range(3)", "d.items()",
                                "messages | selectattr('role', 'eq', 'user')", self.expr(1)])
            target = self.pick(["x", "item", "message"])
            pair = "k, v" if source == "d.items()" else target
            condition = f" if {self.expr(1)}" if self.rng.random() < 0.2 else ""
            self.names += ["x", "item", "message", "k", "v", "loop.index", "loop.first", "loop.last", "loop.length",
                           "loop.index0", "loop.revindex", "loop.previtem"]
            body = self.block(depth - 1)
            if self.rng.random() < 0.2:
                body += self.tag(f"if {self.expr(1)}") + self.tag(self.pick(["break", "continue"])) + self.tag("endif")
            out = self.tag(f"for {pair} in {source}{condition}") + body
            if self.rng.random() < 0.2:
                out += self.tag("else") + self.block(depth - 1)
            return out + self.tag("endfor")
        if kind == 4:
            name = self.pick(["y", "w", "acc"])
            self.names.append(name)
            if self.rng.random() < 0.3:
                return self.tag(f"set {name}") + self.block(depth - 1) + self.tag("endset")
            return self.tag(f"set {name} = {self.expr()}")
        if kind == 5:
            self.names.append("ns.total")
            return (self.tag("set ns = namespace(total=0, seen=false)") + self.tag(f"for x in {self.pick(['l', 'mix', 'm'])}")
                    + self.tag(f"set ns.total = ns.total ~ x") + self.tag("endfor") + "{{ ns.total }}")
        if kind == 6:
            self.names += ["a", "b2"]
            macro = self.tag(f"macro show(a, b2={self.literal(0)})") + self.block(depth - 1) + self.tag("endmacro")
            call = self.pick([f"{{{{ show({self.expr(1)}) }}}}", f"{{{{ show({self.expr(1)}, b2={self.expr(1)}) }}}}",
                              f"{{{{ show({self.expr(1)}) | trim }}}}"])
            return macro + call
        if kind == 7:
            return (self.tag("macro wrap(tag)") + "<{{ tag }}>{{ caller() }}</{{ tag }}>" + self.tag("endmacro")
                    + self.tag(f"call wrap({self.pick(STRINGS)})") + self.block(depth - 1) + self.tag("endcall"))
        if kind == 8:
            return (self.tag(f"filter {self.pick(['upper', 'trim', 'lower', 'title', 'indent(2)'])}")
                    + self.block(depth - 1) + self.tag("endfilter"))
        return f"{{{{ {self.filtered(2)} }}}}"


def case(rng):
    grammar = Grammar(rng)
    template = "".join(grammar.statement(3) for _ in range(rng.randint(1, 4)))
    return {"template": template, "variables": VARIABLES}


def cases(seed, count):
    rng = random.Random(seed)
    return [case(rng) for _ in range(count)]
