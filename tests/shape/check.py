#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""
The shape of hbmguardd (issue 18): no circle of imports among the daemon's
files, and hbmguardd.c short enough to read first.

The graph is of modules: daemon/x.c and daemon/x.h are module x.  A file of
module a that includes "y.h" (a header of daemon/) makes a depend on y, and
on every module whose .c defines a function y.h declares: a header shared by
several files (as hbmguardd.h once was) links its includer to each of them.
An object a header declares extern links the same way as a function (a
table of function pointers, as kernel.h's kernel_ops).  An include is
found however it is spelt ("./x.h", "../daemon/x.h", <x.h> through
-I daemon/): by the file it names.  A prototype written into a .c instead
of included, or a declaration the patterns do not read (an attribute
before the name, the type on a line of its own) is not seen: the daemon's
files have none, and review keeps it so.  A call through a function pointer main() set (daemon.c's hooks,
a sink's callback) is not an import: it is how a part tells without
knowing who listens, and what this check leaves to the reader.  A cycle is
printed and fails the check, as does a hbmguardd.c of MAX_MAIN_LINES lines
or more.

    tests/shape/check.py [DAEMON_DIR]      (default: daemon/ of this tree)
"""
import os
import re
import sys

MAX_MAIN_LINES = 300
INCLUDE = re.compile(r'^\s*#\s*include\s+["<]([^">]+\.h)[">]', re.M)


# A function's name where a line starts with its type: kernel style puts
# both on one line, for a declaration and a definition alike.
FUNCTION = re.compile(r'^(?!static\b|typedef\b|struct\s+\w+\s*\{|#)'
                      r'[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\(', re.M)
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
# An object: declared "extern T name;" in a header, defined at file scope,
# not static, in a .c ("T name = ...;", "T name[...];").
EXTERN = re.compile(r'^\s*extern\b[^;(]*?\b([A-Za-z_]\w*)\s*(?:\[[^]]*\]\s*)*;', re.M)
OBJECT = re.compile(r'^(?!static\b|extern\b|typedef\b|return\b|#|\s)'
                    r'[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*(?:\[[^]]*\]\s*)*(?:=|;)', re.M)


def included(root, f, inc):
    """The daemon header file @f names by @inc, or None."""
    path = os.path.normpath(os.path.join(root, inc))
    if os.path.dirname(path) != os.path.normpath(root):
        return None
    name = os.path.basename(path)
    return name[:-2] if os.path.isfile(path) else None


def graph(root):
    files = sorted(f for f in os.listdir(root) if f.endswith(('.c', '.h')))
    text = {}
    for f in files:
        with open(os.path.join(root, f), encoding='utf-8') as src:
            text[f] = src.read()
    headers = {f[:-2] for f in files if f.endswith('.h')}
    declared = {}
    for h in headers:
        code = COMMENT.sub('', text[h + '.h'])
        declared[h] = set(FUNCTION.findall(code)) | set(EXTERN.findall(code))
    defined = {}
    for f in files:
        if f.endswith('.c'):
            code = COMMENT.sub('', text[f])
            for name in FUNCTION.findall(code) + OBJECT.findall(code):
                defined.setdefault(name, set()).add(f[:-2])
    deps = {}
    for f in files:
        mod = f[:-2]
        deps.setdefault(mod, set())
        for spelt in INCLUDE.findall(COMMENT.sub('', text[f])):
            inc = included(root, f, spelt)
            if inc not in headers:
                continue
            deps[mod].add(inc)
            for name in declared[inc]:
                deps[mod] |= defined.get(name, set())
        deps[mod].discard(mod)
    return deps


def cycles(deps):
    """Every elementary cycle found by a depth-first walk, each once."""
    found, seen = [], set()
    state = {}

    def walk(mod, path):
        state[mod] = 'open'
        path.append(mod)
        for dep in sorted(deps.get(mod, ())):
            if state.get(dep) == 'open':
                cyc = path[path.index(dep):]
                key = frozenset(cyc)
                if key not in seen:
                    seen.add(key)
                    found.append(cyc + [dep])
            elif dep not in state:
                walk(dep, path)
        path.pop()
        state[mod] = 'done'

    for mod in sorted(deps):
        if mod not in state:
            walk(mod, [])
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '..', '..', 'daemon')
    deps = graph(root)
    failed = False
    for cyc in cycles(deps):
        print('circle of imports: ' + ' -> '.join(cyc))
        failed = True
    with open(os.path.join(root, 'hbmguardd.c'), encoding='utf-8') as f:
        lines = sum(1 for _ in f)
    if lines >= MAX_MAIN_LINES:
        print(f'hbmguardd.c has {lines} lines: it must stay under {MAX_MAIN_LINES}')
        failed = True
    for mod in sorted(deps):
        if deps[mod]:
            print(f'  {mod} -> {" ".join(sorted(deps[mod]))}')
    print('shape: ' + ('FAILED' if failed else f'no circle, hbmguardd.c {lines} lines'))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
