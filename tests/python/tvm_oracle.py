"""Shared pieces of the differential tests against apache-tvm (tests/python/test_tvm_oracle_*.py,
docs/tvm-oracle.md): random modules written as TVMScript, random partitioning problems, and the
comparison of TVM's text with Partita's.

The generator is the Python counterpart of tests/cpp/script/random_roundtrip_test.cc's, extended
with what TVM users write: symbolic dimensions, tuples and tuple parameters, primitive values
and parameters, shapes, strings, dtypes, packed calls, match_cast to new symbolic variables,
if/else, nested functions (with symbolic signatures of their own), calls between module
functions and operators with attributes. It writes TVMScript that both TVM 0.27 and Partita
parse (`ty_args=`, the spelling both accept).

Partita prints TVM v0.26's spellings (R.Any, T.<dtype>, ty_args, a callable's purity); TVM 0.27
prints a few things beyond them (symbolic variables declared by TypeVar, I.StringType(), the
tirx module). `tvm_to_conformance_dialect` rewrites those token by token; the table of
differences is in docs/tvm-oracle.md.
"""
import random
import re

SYMBOLS = ("n", "m")


class ModuleGenerator:
    """One random module per seed, as TVMScript source."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    # ---- helpers ----
    def pick(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def coin(self, percent):
        return self.rng.randrange(100) < percent

    def fresh(self, hint):
        self.count += 1
        return f"{hint}{self.count}"

    def tensor(self, dims, dtype="float32"):
        inner = ", ".join(str(d) for d in dims)
        if len(dims) == 1:
            inner += ","
        return f'R.Tensor(({inner}), dtype="{dtype}")'

    def sig_tensor(self, dims, dtype="float32"):
        return self.tensor([f'"{d}"' if isinstance(d, str) else d for d in dims], dtype)

    # ---- the module ----
    def module(self):
        rng = self.rng
        ndim = 1 + rng.randrange(3)
        self.symbolic = self.coin(60)
        self.dims = [self.pick(SYMBOLS) if self.symbolic and self.coin(50) else 1 + rng.randrange(6)
                     for _ in range(ndim)]
        if self.symbolic and not any(isinstance(d, str) for d in self.dims):
            self.dims[0] = "n"
        lines = ["@I.ir_module", "class Module:"]
        if self.coin(10):
            lines.append('    I.module_attrs({"opt_level": %d, "tag": "t%d"})' % (rng.randrange(4), rng.randrange(9)))
        self.two_param_helpers = []
        nfuncs = 1 + rng.randrange(3)
        for f in range(nfuncs):
            name = "main" if f + 1 == nfuncs else f"helper{f}"
            lines += self.function(name, top=True)
        return "\n".join(lines) + "\n"

    def function(self, name, top, indent=4, private=None):
        rng = self.rng
        self.count = 0
        pad = " " * indent
        dims = self.dims
        sym = sorted({d for d in dims if isinstance(d, str)})
        t = self.tensor(dims)
        params = [("x", self.sig_tensor(dims)), ("cond", 'R.Prim("bool")')]
        if top and self.coin(30):
            params.append(("extra", f'R.Tuple({self.sig_tensor(dims)}, R.Prim("int64"))'))
        if top and self.coin(20):
            params.append(("s", 'R.Shape(ndim=%d)' % len(dims)))
        if top and self.coin(15):
            params.append(("o", "R.Object"))
        ret_tuple = self.coin(25)
        ret = f"R.Tuple({self.sig_tensor(dims)}, {self.sig_tensor(dims)})" if ret_tuple else self.sig_tensor(dims)
        self.impure = top and self.coin(20)
        keywords = []
        if self.impure:
            keywords.append("pure=False")
        if top and name != "main" and (private if private is not None else self.coin(40)):
            keywords.append("private=True")
        deco = "@R.function" + (f"({', '.join(keywords)})" if keywords else "")
        sig = ", ".join(f"{p}: {s}" for p, s in params)
        out = [f"{pad}{deco}", f"{pad}def {name}({sig}) -> {ret}:"]
        body = pad + "    "
        for s in sym:
            out.append(f"{body}{s} = T.int64()")
        self.uses_k = False
        if self.coin(30):
            out.append(f"{body}k = T.int64()")
            self.uses_k = True
        if top and self.coin(25):
            out.append(f'{body}R.func_attr({{"Primitive": 1}})' if self.coin(30) else f'{body}R.func_attr({{"note": "r{rng.randrange(9)}"}})')
        pool = ["x"]
        # A plain block, then a dataflow block, then perhaps plain bindings again.
        out += self.plain_bindings(body, pool, t, dims, top, params)
        out.append(f"{body}with R.dataflow():")
        df, outputs = self.dataflow_bindings(body + "    ", pool, t, dims)
        out += df
        out.append(f"{body}    R.output({', '.join(outputs)})")
        result = outputs[-1]
        if ret_tuple:
            out.append(f"{body}res = ({result}, x)")
            result = "res"
        out.append(f"{body}return {result}")
        if len(params) == 2 and name != "main" and not ret_tuple and not self.impure:
            self.two_param_helpers.append(name)
        return out

    def operand(self, pool, t, dims):
        a = self.pick(pool)
        if self.coin(10):
            return f'R.const({self.rng.randrange(-20, 20) / 4}, "float32")'
        return a

    def value(self, pool, t, dims):
        """A call giving a tensor of the function's type, from tensors of the pool."""
        rng = self.rng
        a, b = self.pick(pool), self.operand(pool, t, dims)
        kind = rng.randrange(14)
        if kind <= 3:
            return f"R.{self.pick(['add', 'multiply', 'subtract', 'maximum', 'minimum', 'divide'])}({a}, {b})"
        if kind == 4:
            return f"R.{self.pick(['exp', 'nn.relu', 'sigmoid', 'tanh', 'negative', 'nn.silu', 'abs'])}({a})"
        if kind == 5:
            lo = rng.randrange(-8, 0) / 2
            return f"R.clip({a}, T.float64({lo}), T.float64({lo + rng.randrange(1, 9) / 2}))"
        if kind == 6:
            return f"R.nn.softmax({a}, axis={-1 - rng.randrange(len(dims))})"
        if kind == 7:
            return f"R.nn.gelu({a})"
        if kind == 8:
            axes = sorted(rng.sample(range(len(dims)), 1 + rng.randrange(len(dims))))
            return f"R.{self.pick(['sum', 'mean', 'max'])}({a}, axis={axes}, keepdims=True)" if all(
                dims[i] == 1 for i in axes) else f"R.nn.relu({a})"
        if kind == 9:
            shape = ", ".join(str(d) for d in dims)
            return f"R.reshape({a}, R.shape([{shape}]))"
        if kind == 10:
            return f"R.maximum({a}, {b})"
        if kind == 11:
            return f"R.power({a}, R.const(2.0, \"float32\"))"
        if kind == 12:  # operators with attributes that keep the type
            axis = rng.randrange(len(dims))
            forms = [f"R.flip({a}, axis={axis})", f"R.cumsum({a}, axis={axis})",
                     f"R.nn.log_softmax({a}, axis=-1)", f'R.astype({a}, dtype="float32")',
                     f"R.permute_dims({a}, axes={list(range(len(dims)))})", f"R.ones_like({a})",
                     f"R.tile({a}, repeats={[1] * len(dims)})", f"R.concat(({a},), axis={axis})",
                     f"R.nn.gelu_tanh({a})", f"R.zeros_like({a})",
                     f'R.zeros(R.shape([{", ".join(str(d) for d in dims)}]), dtype="float32")']
            if all(isinstance(d, int) for d in dims):
                forms.append(f"R.strided_slice({a}, axes=[0], begin=[0], end=[{dims[0]}])")
            if dims[axis] == 1:
                forms.append(f"R.variance({a}, axis=[{axis}], keepdims=True)")
            return self.pick(forms)
        return f"R.add({a}, {b})"

    def dataflow_bindings(self, pad, pool, t, dims):
        rng = self.rng
        out, outputs = [], []
        for _ in range(1 + rng.randrange(5)):
            kind = rng.randrange(10)
            if kind == 0:  # a tuple and a get-item
                tv, gv = self.fresh("tup"), self.fresh("lv")
                out.append(f"{pad}{tv} = ({self.pick(pool)}, {self.pick(pool)})")
                out.append(f"{pad}{gv} = {tv}[{rng.randrange(2)}]")
                pool.append(gv)
                continue
            if kind == 1 and self.uses_k:  # match_cast to a new symbolic variable
                mv = self.fresh("mc")
                kd = ["k"] + [d for d in dims[1:]]
                out.append(f"{pad}{mv} = R.match_cast({self.pick(pool)}, {self.tensor(kd)})")
                ev = self.fresh("lv")
                out.append(f"{pad}{ev} = R.exp({mv})")
                continue
            v = self.fresh("lv")
            out.append(f"{pad}{v} = {self.value(pool, t, dims)}")
            pool.append(v)
        g = "gv"
        out.append(f"{pad}{g} = {self.value(pool, t, dims)}")
        pool.append(g)
        outputs.append(g)
        return out, outputs

    def plain_bindings(self, pad, pool, t, dims, top, params):
        rng = self.rng
        out = []
        for _ in range(rng.randrange(4)):
            kind = rng.randrange(9)
            if kind == 0:
                v = self.fresh("p")
                # Annotated: TVM >= 0.26 has no R.Prim(value=...) to derive (docs/tvm-oracle.md).
                choices = ['R.prim_value(T.int64(%d))' % rng.randrange(9),
                           'R.prim_value(T.float32(%s))' % (rng.randrange(-8, 8) / 4),
                           'R.str("s%d")' % rng.randrange(9), 'R.dtype("float16")']
                ann = {0: ': R.Prim("int64")', 1: ': R.Prim("float32")'}
                k = rng.randrange(len(choices))
                out.append(f"{pad}{v}{ann.get(k, '')} = {choices[k]}")
                continue
            elif kind == 1:
                v = self.fresh("sh")
                out.append(f"{pad}{v} = R.shape([{', '.join(str(d) for d in dims)}])")
            elif kind == 2:
                v = self.fresh("pk")
                sym = [d for d in dims if isinstance(d, str)]
                extra = f", {sym[0]}" if sym and self.coin(50) else ""
                if self.impure:
                    out.append(f'{pad}{v} = R.call_packed("ext_{rng.randrange(5)}", {self.pick(pool)}{extra}, ty_args=({t},))')
                else:
                    out.append(f'{pad}{v} = R.call_pure_packed("ext_{rng.randrange(5)}", {self.pick(pool)}{extra}, ty_args=({t},))')
                pool.append(v)
            elif kind == 3 and top:  # if/else on the bool parameter
                v = self.fresh("br")
                a, b = self.pick(pool), self.pick(pool)
                out.append(f"{pad}if cond:")
                out.append(f"{pad}    {v} = R.add({a}, {b})")
                out.append(f"{pad}else:")
                w = self.fresh("lv")
                out.append(f"{pad}    {w} = R.multiply({a}, {b})")
                out.append(f"{pad}    {v} = R.nn.relu({w})")
                pool.append(v)
            elif kind == 4 and top:  # a nested function, with a symbolic signature of its own
                fname = self.fresh(self.pick(["local_func", "inner"]))
                own = [{"n": "p", "m": "q"}[d] if isinstance(d, str) else d for d in dims]
                inner = ["@R.function", f"def {fname}(a: {self.sig_tensor(own)}) -> {self.sig_tensor(own)}:"]
                for d in sorted({d for d in own if isinstance(d, str)}):
                    inner.append(f"    {d} = T.int64()")
                if self.coin(50):
                    inner.append(f'    R.func_attr({{"Composite": "test.p{rng.randrange(3)}"}})')
                inner += ["    with R.dataflow():",
                          f"        b = R.{self.pick(['exp', 'nn.relu', 'negative'])}(a)",
                          "        c = R.add(b, a)",
                          "        R.output(c)",
                          "    return c"]
                out += [pad + line for line in inner]
                v = self.fresh("lv")
                out.append(f"{pad}{v} = {fname}({self.pick(pool)})")
                pool.append(v)
            elif kind == 5 and top and self.two_param_helpers:  # a call of an earlier function
                h = self.pick(self.two_param_helpers)
                v = self.fresh("call")
                out.append(f"{pad}{v} = Module.{h}({self.pick(pool)}, cond)")
            else:
                v = self.fresh("lv")
                out.append(f"{pad}{v} = {self.value(pool, t, dims)}")
                pool.append(v)
        return out


# ---- partitioning problems ----------------------------------------------------------------------

# Operators of the chains, with how to call them on a tensor `a` (and a second operand `b`) and
# the pattern constructor of a single call.
CHAIN_OPS = {
    "relax.add": ("R.add({a}, {b})", 2),
    "relax.multiply": ("R.multiply({a}, {b})", 2),
    "relax.subtract": ("R.subtract({a}, {b})", 2),
    "relax.exp": ("R.exp({a})", 1),
    "relax.nn.relu": ("R.nn.relu({a})", 1),
    "relax.sigmoid": ("R.sigmoid({a})", 1),
    "relax.matmul": ("R.matmul({a}, {w})", 2),
}


class PartitionProblem:
    """A random dataflow DAG with a symbolic batch and a random pattern table."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        rng = self.rng
        self.batch = "n" if rng.randrange(100) < 70 else 4
        width = self.width = 4
        b = f'"{self.batch}"' if isinstance(self.batch, str) else self.batch
        lines = ["@I.ir_module", "class Module:", "    @R.function",
                 f'    def main(x: R.Tensor(({b}, {width}), dtype="float32"), y: R.Tensor(({b}, {width}), dtype="float32"), '
                 f'w: R.Tensor(({width}, {width}), dtype="float32")) -> R.Tensor(({b}, {width}), dtype="float32"):']
        if isinstance(self.batch, str):
            lines.append("        n = T.int64()")
        lines.append("        with R.dataflow():")
        pool = ["x", "y"]
        self.ops_used = []
        for i in range(2 + rng.randrange(7)):
            op = rng.choice(sorted(CHAIN_OPS))
            form, _ = CHAIN_OPS[op]
            # Mostly chains (the last value), sometimes a diamond or a reuse of an input.
            a = pool[-1] if rng.randrange(100) < 70 else rng.choice(pool)
            bb = rng.choice(pool)
            v = f"v{i}"
            lines.append(f"            {v} = " + form.format(a=a, b=bb, w="w"))
            pool.append(v)
            self.ops_used.append(op)
        lines.append(f"            gv = R.add({pool[-1]}, x)" if rng.randrange(2) else f"            gv = {pool[-1]}")
        lines.append("            R.output(gv)")
        lines.append("        return gv")
        self.source = "\n".join(lines) + "\n"
        path = rng.randrange(3)  # the three ways the passes are used, equally often
        self.annotate = path == 0
        self.merge = path == 1
        # Patterns: single operators and two-operator chains over the operators used, each
        # named <backend>.<what> with two backends.
        self.table = []
        candidates = sorted(set(self.ops_used))
        for _ in range(1 + rng.randrange(4)):
            backend = rng.choice(["A", "B"])
            if rng.randrange(100) < 40 and len(candidates) >= 1:
                outer = rng.choice(candidates)
                inner = rng.choice(candidates)
                self.table.append((f"{backend}.{outer.split('.')[-1]}_{inner.split('.')[-1]}", ("chain", outer, inner)))
            else:
                op = rng.choice(candidates)
                self.table.append((f"{backend}.{op.split('.')[-1]}", ("single", op)))

    def patterns(self, dpl):
        """The pattern table in the dpl module given (tvm.relax.dpl.pattern or Partita's)."""
        def call(op, args):
            return dpl.is_op(op)(*args)

        def operands(op, first):
            n = CHAIN_OPS[op][1]
            return [first] + [dpl.wildcard() for _ in range(n - 1)]

        out = []
        for name, spec in self.table:
            if spec[0] == "single":
                out.append((name, call(spec[1], operands(spec[1], dpl.wildcard()))))
            else:
                inner = call(spec[2], operands(spec[2], dpl.wildcard()))
                out.append((name, call(spec[1], operands(spec[1], inner))))
        return out


# ---- the dialect translation --------------------------------------------------------------------

_DECLARATION = re.compile(r"^\s*\w+ = (T\.\w+\(\)|TypeVar\(\"\w+\"\))$")
_SYMBOL_STRING = re.compile(r'"([A-Za-z_]\w*(?: [-+*] \d+)?)"(?=[,)\]])')


def tvm_to_conformance_dialect(text):
    """TVM 0.27's text with what it prints beyond v0.26 replaced by what Partita prints (see
    docs/tvm-oracle.md): the type of a string, the tir module. (R.Any, T.<dtype>, ty_args and a
    callable's purity are v0.26's spellings, which Partita prints too.)"""
    text = text.replace("I.StringType()", "R.Any")
    text = text.replace("tvm.script import tirx", "tvm.script import tir")
    return text.replace("# from tvm.script", "# from partita.script")


def comparable_lines(text):
    """The lines both printers must agree on word for word: without comments, blank lines and
    symbolic variable declarations (whose placement differs: docs/tvm-oracle.md), with symbolic
    dimensions unquoted (v0.26 quotes those a signature introduces, 0.27 declares them)."""
    out = []
    for line in text.splitlines():
        s = line.rstrip()
        if not s.strip() or s.strip().startswith("#") or _DECLARATION.match(s):
            continue
        out.append(_SYMBOL_STRING.sub(r"\1", s) if " def " in s or s.lstrip().startswith("def ") else s)
    return out


_PRIM_SHORT = re.compile(r"(?<![\w.])T\.(bool|u?int\d+|float\d+|bfloat16)(?![\w(])")


def partita_to_tvm_source(text):
    """Partita's text as TVM 0.27 parses it. Partita prints v0.26's spellings, which TVM prints
    too, but TVM 0.27's parser cannot read a `T.int64` inside an `R.Tuple` of a signature (its
    get_symbolic_vars fails on it), so primitive struct info is given to it as R.Prim("int64")."""
    return _PRIM_SHORT.sub(lambda m: f'R.Prim("{m.group(1)}")', text)
