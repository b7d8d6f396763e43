#!/usr/bin/env python3
"""Reports the import cycles between the modules of each crate of the workspace.

    scripts/import-cycles.py              # every crate under crates/; exit 1 if a cycle is found
    scripts/import-cycles.py crates/net   # some crates only
    scripts/import-cycles.py --why ...    # each edge of a cycle with the line that makes it
    scripts/import-cycles.py --with-parents ...  # count a module's uses of its descendants too
    scripts/import-cycles.py --self-test  # runs the checker on the fixtures in scripts/tests

A module is a file: `src/lib.rs` (or `src/main.rs`) is the crate root, `src/a.rs` and
`src/a/mod.rs` are module `a`, `src/a/b.rs` is `a::b`. Inline modules (`mod tests { .. }`) belong
to their file. Module A imports module B when A's file names B by a path:
- `use crate::b::..` (also inside `use crate::{..}` trees) or `crate::b::..` anywhere in the code;
- `super::..` that leaves the file (`super::` inside an inline `mod tests` is the file itself);
- `self::b::..` or `b::..` in the module that declares `mod b` (a parent using its child), but
  see below.
A path is followed down the module files as far as they go (`crate::a::b::X` is `a::b` when
`a/b.rs` exists, `a` otherwise), and through the `pub use` re-exports of the module it lands in
(`crate::Cluster`, re-exported by lib.rs from `config`, is `config`); a `pub use` is an import
too. `mod` declarations are not imports, nor, by default, is a module's use of its own
descendants (lib.rs or a mod.rs gathering or calling into the modules it declares: the module
tree itself); a child's use of its parent is an import like any other. `--with-parents` counts the parents'
uses too. Code under `#[cfg(test)]` counts like the rest: a test module is part of its file.
Comments and string literals are skipped.

Each cycle is printed on one line, `crates/net: local -> persist -> local`. Within a strongly
connected set of modules the checker prints, for every import edge inside the set, the shortest
cycle through that edge (each cycle once): every import that takes part in a cycle appears in
at least one line, without the exponential list of every elementary cycle.
"""
import os
import re
import sys
from collections import deque

TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<line_comment>//[^\n]*)
  | (?P<block_comment>/\*)
  | (?P<raw_string>b?r\#*")
  | (?P<string>b?")
  | (?P<char>b?'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])')
  | (?P<lifetime>'[A-Za-z_][A-Za-z0-9_]*)
  | (?P<ident>r\#[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*)
  | (?P<path_sep>::)
  | (?P<punct>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def tokens(text):
    """The identifiers, `::` and punctuation of Rust source, with their line numbers; comments,
    strings and characters left out."""
    out = []
    pos, line, n = 0, 1, len(text)
    while pos < n:
        m = TOKEN.match(text, pos)
        kind = m.lastgroup
        start = pos
        if kind == "block_comment":
            depth, i = 1, pos + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            pos = i
        elif kind == "raw_string":
            hashes = m.group().count("#")
            end = text.find('"' + "#" * hashes, m.end())
            pos = n if end < 0 else end + 1 + hashes
        elif kind == "string":
            i = m.end()
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            pos = i + 1
        else:
            pos = m.end()
            if kind == "ident":
                out.append((m.group().removeprefix("r#"), line))
            elif kind in ("path_sep", "punct"):
                out.append((m.group(), line))
        line += text.count("\n", start, pos)
    return out


def is_ident(tok):
    return tok[0].isalpha() or tok[0] == "_"


class Module:
    def __init__(self, name, path):
        self.name = name  # "crate", "a", "a::b"
        self.path = path
        self.children = set()  # names of the child modules that are files
        self.reexports = {}  # name -> (full path segments) of each `pub use`
        self.paths = []  # (segments, line, inline_depth) of every path met in the code
        self.declared = set()  # names in `mod x;` declarations


def module_files(src):
    """Module name -> file, for a crate's `src` directory."""
    found = {}
    for root, _dirs, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)
            parts = rel[:-3].split(os.sep)
            if parts in (["lib"], ["main"]):
                name = "crate"
            elif parts[-1] == "mod":
                name = "::".join(parts[:-1])
            else:
                name = "::".join(parts)
            if name == "crate" and "crate" in found and parts == ["main"]:
                continue  # a crate with both: the library is the tree the modules live in
            found[name] = os.path.join(src, rel)
    return found


def parse_use_tree(toks, i, prefix, out):
    """Parses a `use` tree from toks[i]; appends each leaf's (segments, alias) to out and
    returns the index after the tree."""
    segs = list(prefix)
    while i < len(toks):
        t = toks[i][0]
        if t == "{":
            i += 1
            while i < len(toks) and toks[i][0] != "}":
                i = parse_use_tree(toks, i, segs, out)
                if i < len(toks) and toks[i][0] == ",":
                    i += 1
            return i + 1
        if t == "*":
            out.append((segs + ["*"], None))
            return i + 1
        if is_ident(t):
            segs.append(t)
            i += 1
            if i < len(toks) and toks[i][0] == "::":
                i += 1
                continue
            alias = None
            if i + 1 < len(toks) and toks[i][0] == "as":
                alias = toks[i + 1][0]
                i += 2
            out.append((segs, alias))
            return i
        if t == "::":
            i += 1
            continue
        return i + 1
    return i


def scan(module, text):
    """Fills `module` with the paths, `pub use` re-exports and `mod` declarations of its file."""
    toks = tokens(text)
    inline = []  # brace depths at which inline modules opened
    depth = 0
    i = 0
    while i < len(toks):
        t, line = toks[i]
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if inline and inline[-1] == depth:
                inline.pop()
        elif t == "mod" and i + 2 < len(toks) and is_ident(toks[i + 1][0]):
            if toks[i + 2][0] == ";" and not inline:
                module.declared.add(toks[i + 1][0])
            elif toks[i + 2][0] == "{":
                inline.append(depth)
        elif t == "use":
            public = i > 0 and toks[i - 1][0] == "pub" or (
                i > 3 and toks[i - 1][0] == ")" and toks[i - 4][0] == "pub"
            )
            leaves = []
            j = parse_use_tree(toks, i + 1, [], leaves)
            for segs, alias in leaves:
                if segs and segs[-1] == "self":
                    segs = segs[:-1]
                if not segs:
                    continue
                if public and not inline:
                    module.reexports[alias or segs[-1]] = segs
                module.paths.append((segs, line, len(inline)))
            i = j
            continue
        elif is_ident(t) and (i == 0 or toks[i - 1][0] != "::"):
            segs = [t]
            j = i + 1
            while j + 1 < len(toks) and toks[j][0] == "::" and is_ident(toks[j + 1][0]):
                segs.append(toks[j + 1][0])
                j += 2
            if len(segs) > 1:
                module.paths.append((segs, line, len(inline)))
                i = j
                continue
        i += 1


def parent(name):
    if name == "crate":
        return None
    return name.rsplit("::", 1)[0] if "::" in name else "crate"


def child(name, c):
    return c if name == "crate" else f"{name}::{c}"


def resolve(modules, here, segs, inline_depth, hops=0):
    """The module file a path written in module `here` lands in, or None if it leaves the
    crate (or is a local name)."""
    first = segs[0]
    rest = list(segs[1:])
    if first == "crate":
        at = "crate"
    elif first == "super":
        ups = 1
        while rest and rest[0] == "super":
            ups, rest = ups + 1, rest[1:]
        ups -= inline_depth  # inside `mod tests`, the first `super`s stay in the file
        at = here
        for _ in range(max(ups, 0)):
            at = parent(at)
            if at is None:
                return None
    elif first == "self":
        at = here
    elif first in modules[here].declared and child(here, first) in modules:
        at = child(here, first)
    else:
        return None
    while rest:
        m = modules[at]
        nxt = child(at, rest[0])
        if rest[0] in m.children and nxt in modules:
            at, rest = nxt, rest[1:]
            continue
        target = m.reexports.get(rest[0])
        if target is not None and hops < 8:
            seen = resolve(modules, at, target + rest[1:], 0, hops + 1)
            if seen is not None:
                return seen
        break
    return at


def descends(name, ancestor):
    """Whether module `name` lies under module `ancestor` (or is it)."""
    return ancestor == "crate" or name == ancestor or name.startswith(ancestor + "::")


def graph(src, with_parents=False):
    """Module names, and the import edges between them: {a: {b: (file, line)}}."""
    files = module_files(src)
    modules = {name: Module(name, path) for name, path in files.items()}
    for name in modules:
        p = parent(name)
        if p is not None and p in modules:
            modules[p].children.add(name.rsplit("::", 1)[-1])
    for name, m in modules.items():
        with open(m.path, encoding="utf-8") as f:
            scan(m, f.read())
    edges = {name: {} for name in modules}
    for name, m in modules.items():
        for segs, line, inline_depth in m.paths:
            to = resolve(modules, name, segs, inline_depth)
            if to is None or to == name or to in edges[name]:
                continue
            if with_parents or not descends(to, name):
                edges[name][to] = (m.path, line)
    return edges


def components(edges):
    """Tarjan's strongly connected components, each as a set, in a stable order."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def shortest(edges, comp, start, goal):
    """A shortest path start -> goal inside comp (breadth first, neighbours in name order)."""
    prev = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        if v == goal:
            path = []
            while v is not None:
                path.append(v)
                v = prev[v]
            return path[::-1]
        for w in sorted(edges[v]):
            if w in comp and w not in prev:
                prev[w] = v
                queue.append(w)
    return None


def cycles(edges):
    """For every import edge inside a strongly connected set, the shortest cycle through it,
    each cycle once, rotated to start at its smallest module."""
    found = []
    seen = set()
    for comp in components(edges):
        if len(comp) < 2:
            continue
        for a in sorted(comp):
            for b in sorted(edges[a]):
                if b not in comp:
                    continue
                back = shortest(edges, comp, b, a)
                cyc = [a] + back[:-1]
                k = cyc.index(min(cyc))
                cyc = tuple(cyc[k:] + cyc[:k])
                if cyc not in seen:
                    seen.add(cyc)
                    found.append(cyc)
    return sorted(found, key=lambda c: (len(c), c))


def display(name):
    return "lib" if name == "crate" else name


def check(crate_dirs, why=False, with_parents=False, out=sys.stdout):
    """Prints every cycle of each crate; returns how many were found."""
    total = 0
    for crate in crate_dirs:
        src = os.path.join(crate, "src")
        if not os.path.isdir(src):
            continue
        edges = graph(src, with_parents)
        for cyc in cycles(edges):
            total += 1
            ring = list(cyc) + [cyc[0]]
            print(f"{crate}: " + " -> ".join(display(m) for m in ring), file=out)
            if why:
                for a, b in zip(ring, ring[1:]):
                    path, line = edges[a][b]
                    print(f"    {display(a)} -> {display(b)}: {path}:{line}", file=out)
    return total


def self_test():
    """Runs the checker on scripts/tests/import-cycles: each fixture crate's expected output is
    in its `expected` file (empty for a crate without cycles), its flags in `args` if any."""
    import io

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "import-cycles")
    failures = 0
    names = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    for name in names:
        crate = os.path.join(root, name)
        buf = io.StringIO()
        args_file = os.path.join(crate, "args")
        flags = open(args_file, encoding="utf-8").read().split() if os.path.exists(args_file) else []
        check([crate], why="--why" in flags, with_parents="--with-parents" in flags, out=buf)
        got = buf.getvalue().replace(crate + ":", name + ":")
        with open(os.path.join(crate, "expected"), encoding="utf-8") as f:
            want = f.read()
        if got != want:
            failures += 1
            print(f"FAIL {name}\n--- expected\n{want}--- got\n{got}", file=sys.stderr)
        else:
            print(f"ok   {name}")
    if not names:
        print(f"no fixtures in {root}", file=sys.stderr)
        return 1
    return 1 if failures else 0


def main(argv):
    why = "--why" in argv
    with_parents = "--with-parents" in argv
    args = [a for a in argv if a not in ("--why", "--with-parents")]
    if "--self-test" in args:
        return self_test()
    for a in args:
        if a.startswith("-"):
            print(f"import-cycles: unknown option {a!r} (known: --why, --with-parents, --self-test)",
                  file=sys.stderr)
            return 2
    if args:
        crates = args
        for c in crates:
            if not os.path.isdir(os.path.join(c, "src")):
                print(f"import-cycles: {c!r} has no src/ directory (expected a crate's directory)",
                      file=sys.stderr)
                return 2
    else:
        top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")
        top = os.path.relpath(top)
        crates = sorted(os.path.join(top, d) for d in os.listdir(top))
    return 1 if check(crates, why, with_parents) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
