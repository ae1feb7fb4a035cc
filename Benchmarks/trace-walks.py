#!/usr/bin/env python3
"""Counts one walk's crossings and files from a callgrind dump (see trace-walks.sh).

    trace-walks.py TITLE SOURCES BINARY CALLGRIND-OUT ENTRIES [HOP...]

ENTRIES: the walk's entry functions, mangled prefixes separated by commas (a `*` stands for
any run of characters); only what they reach is the walk (a call into them from outside is
not).

(The dump is of a copy of BINARY without its debug information, which this valgrind cannot
read; each function's file comes from BINARY's, through its symbol's address.)

A crossing is a distinct caller-type -> callee-type pair of hand-written AppGroups code (a
file under SOURCES); a HOP ("Caller>Callee") is added as one (a queue hop, which callgrind
cannot see as a call). Left out: the standard library, Foundation, Dispatch and the C shims
(not under SOURCES), compiler-made members (thunks, partial applications, outlined copies,
value witnesses, accessors of stored properties, memberwise initializers, default arguments,
metadata), constants and
once-per-process set-up (lazy globals, their addressors), and the Mutex stand-in
(System/Mutex.swift). A call through a left-out function that calls back into hand-written
code (a partial application, the Mutex's withLock, a thunk) counts as the call it forwards.
A closure is its enclosing function's type; the free functions of a file are one "type".
Files: the distinct files of the counted functions; also given counting a type's extension
files (Name+Part.swift) as one with Name.swift, the split no file over 600 lines asks for.
"""
import fnmatch, os, re, subprocess, sys

title, sources, binary, path = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3], sys.argv[4]
entries = sys.argv[5].split(",")
hops = [h.split(">") for h in sys.argv[6:]]
# Once-per-process set-up that a walk's first run passes through (left out with what it calls).
once = ("SuiteStore.installExitFlush",)

# --- callgrind's format, written with --compress-strings=no --compress-pos=no
fn_file = {}      # function -> its file (fl= at fn=)
edges = set()
cur_fl = cur_fn = None
cfl = None
with open(path) as f:
    for line in f:
        if line.startswith("fl="):
            cur_fl = line[3:].strip()
        elif line.startswith("fn="):
            cur_fn = line[3:].strip()
            fn_file.setdefault(cur_fn, cur_fl)
            cfl = None
        elif line.startswith(("cfi=", "cfl=")):
            cfl = line[4:].strip()
        elif line.startswith("cfn="):
            callee = line[4:].strip()
            if cfl is not None:
                fn_file.setdefault(callee, cfl)
            edges.add((cur_fn, callee))
            cfl = None

# Each function's file: its first address's line, in BINARY's debug information.
address = {}
for line in subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    parts = line.split(" ", 2)
    if len(parts) == 3 and parts[1] in "Tt":
        address.setdefault(parts[2], parts[0])
# With --separate-callers, a function is named with its callers ("f'caller'caller's caller"):
# a function shared by many callers (the Mutex's withLock, a thunk) is one node per call
# chain, so what it calls back is the call it forwards for that caller only.
base = lambda node: node.split("'", 1)[0]
nodes = set(fn_file) | {b for _, b in edges}
fn_file = {}
for node in nodes:
    fn_file[base(node)] = None
names = sorted(fn_file)
known = [n for n in names if n in address]
located = subprocess.run(["llvm-symbolizer", "--obj=" + binary, "--functions=none"],
                         input="".join("0x" + address[n] + "\n" for n in known),
                         capture_output=True, text=True, check=True).stdout.strip().split("\n\n")
fn_line = {}
for n, answer in zip(known, located):
    where = answer.strip().rsplit(":", 2)
    fn_file[n] = where[0]
    fn_line[n] = int(where[1]) if len(where) == 3 and where[1].isdigit() else 0

def source_line(fn):
    """The text of the line a function starts at ("" when unknown)."""
    try:
        return open(fn_file[fn]).read().split("\n")[fn_line.get(fn, 0) - 1] if fn_line.get(fn) else ""
    except (OSError, IndexError, TypeError):
        return ""
for n in names:
    if n not in address:
        fn_file[n] = None

out = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(names) + "\n",
                     capture_output=True, text=True, check=True).stdout.split("\n")
demangled = dict(zip(names, out))

def hand_written(fn):
    file = fn_file.get(base(fn)) or ""
    return os.path.realpath(file).startswith(sources + "/") if file.startswith("/") else False

def stored_property(file, name):
    """Whether `name` is a stored property declared in `file` (its accessors are compiler-made)."""
    try:
        text = open(file).read()
    except OSError:
        return False
    for m in re.finditer(r"\b(?:var|let)\s+" + re.escape(name) + r"\b[^\n]*", text):
        decl = m.group(0)
        if not re.search(r"\{\s*(get|set|[^}\s])", decl.split("//")[0]) or "=" in decl.split("{")[0]:
            return True
    return False

# What a function is, from its demangled name: ('drop'|'through'|'count', type, label)
def classify(fn):
    d = demangled.get(fn, fn)
    file = fn_file.get(base(fn)) or ""
    if d.startswith(("partial apply", "reabstraction", "thunk for ", "dispatch thunk", "protocol witness for ")):
        return ("through", None, d)
    if not hand_written(fn):
        return ("drop", None, d)
    if file.endswith("/System/Mutex.swift"):
        return ("through", None, d)
    compiler = ("outlined ", "value witness", "type metadata", "protocol witness table",
                "default argument", "variable initialization expression", "lazy protocol witness",
                "one-time initialization", "unsafeMutableAddressor", "merged ", "associated type",
                "nominal type descriptor", "base conformance", "__derived_", "key path")
    if d.startswith(("partial apply forwarder for ", "reabstraction thunk", "thunk for ",
                     "dispatch thunk", "protocol witness for ", "implicit closure")) or "thunk" in d.split("(")[0]:
        return ("through", None, d)
    if any(d.startswith(c) or (" " + c) in d for c in compiler) or "unsafeMutableAddressor" in d:
        return ("drop", None, d)
    body = d
    # A closure is its enclosing function.
    while True:
        m = re.match(r"(?:specialized )?(?:implicit closure|closure|\S+) #\d+ (?:.*? )?in (.*)", body)
        if not m:
            break
        body = m.group(1)
    in_closure = body != d
    body = re.sub(r"^(?:specialized |static |generic specialization <.*?> of )+", "", body)
    # Qualified name, without its arguments and generic clause.
    head = re.split(r"\(", body, 1)[0]
    head = re.sub(r"<[^<>]*>", "", head).strip()
    parts = head.split(".")
    accessor = parts[-1] if parts[-1] in ("getter", "setter", "modify", "_read", "_modify", "didset", "willset", "init") and len(parts) > 1 and parts[-2] != "" else None
    if accessor in ("getter", "setter", "modify", "_read", "_modify") and len(parts) >= 2:
        if stored_property(file, parts[-2]):
            return ("drop", None, d)
        parts = parts[:-1]
    # A memberwise initializer (its first line is the type's, not an `init`) is compiler-made.
    if parts[-1] in ("init", "__allocating_init") and not in_closure and "init" not in source_line(base(fn)):
        return ("drop", None, d)
    # So is a deinitializer that was not written.
    if parts[-1] in ("deinit", "__deallocating_deinit") and not in_closure and "deinit" not in source_line(base(fn)):
        return ("drop", None, d)
    # Type: everything before the member's name (a free function: its own name).
    if any(o in head for o in once):
        return ("drop", None, d)
    if len(parts) == 1:
        return ("count", "free functions of " + os.path.basename(file), d)
    if parts[-1] in ("init", "__allocating_init", "deinit", "__deallocating_deinit", "subscript") or len(parts) > 1:
        typ = ".".join(parts[:-1]) or parts[0]
    else:
        typ = parts[0]
    typ = re.sub(r"^\(extension in [^)]*\):", "", typ)
    return ("count", typ, d)

kinds = {fn: classify(fn) for fn in fn_file}
kind = {node: kinds[base(node)] for node in nodes}

# Callees as counted: a 'through' callee is replaced by what it calls (transitively).
succ = {}
for a, b in edges:
    succ.setdefault(a, set()).add(b)
def counted_callees(fn, seen=None):
    seen = seen if seen is not None else set()
    result = set()
    for b in succ.get(fn, ()):
        k = kind.get(b, ("drop",))[0]
        if k == "count":
            result.add(b)
        elif k == "through" and b not in seen:
            seen.add(b)
            result |= counted_callees(b, seen)
    return result

# The walk: what the entries reach, not through left-out set-up.
reached = {n for n in nodes if any(fnmatch.fnmatchcase(base(n), e + "*") for e in entries)}
todo = list(reached)
while todo:
    a = todo.pop()
    for b in succ.get(a, ()):
        if b not in reached and not (kind[b][0] == "drop" and hand_written(base(b))):
            reached.add(b)
            todo.append(b)

pairs = {}
for a in reached:
    if kind.get(a, ("drop",))[0] != "count":
        continue
    ta = kind[a][1]
    for b in counted_callees(a):
        tb = kind[b][1]
        if ta != tb:
            pairs.setdefault((ta, tb), set()).add((a, b))

files_of_type = {}
for fn in reached:
    k, t, _ = kind[fn]
    if k == "count":
        files_of_type.setdefault(t, set()).add(os.path.relpath(fn_file[base(fn)], sources))
for a, b in hops:
    pairs.setdefault((a, b), {("hop", "hop")})

files = set()
for t, fs in files_of_type.items():
    files |= fs
print(f"# {title}")
for (ta, tb), calls in sorted(pairs.items()):
    fa = ", ".join(sorted(files_of_type.get(ta, []))) or "-"
    fb = ", ".join(sorted(files_of_type.get(tb, []))) or "-"
    hop = " (the commit queue's hop)" if ("hop", "hop") in calls else ""
    example = ""
    if ("hop", "hop") not in calls:
        a, b = sorted(calls)[0]
        example = "  e.g. " + kind[a][2].split("(")[0] + " -> " + kind[b][2].split("(")[0]
    print(f"#   {ta} -> {tb}{hop}   [{fa} -> {fb}]{example}")
families = {re.sub(r"\+[^/]*\.swift$", ".swift", f_) for f_ in files}
print(f"#   total: {len(pairs)} crossings, {len(files)} files ({len(families)} counting Name+Part.swift as Name.swift)")
for f_ in sorted(files):
    print(f"#     {f_}")

# The same walk counted more coarsely, as issue 23 counted the code before the storage wing was
# rebuilt (this rule gives that code's walks 29 and 22 crossings, where the issue gave "about
# 30" and "about 22"): a nested type is its outermost type; the binary property-list codec
# (BinaryPropertyList*.swift) is one type; the system-call plumbing (Syscall.swift, Errno.swift)
# belongs to its caller, so calls into it and back out of it are not crossings; files are
# counted as families (Name+Part.swift with Name.swift), the codec's as one, the plumbing's not.
def coarse(t, fs):
    if any(os.path.basename(f_).startswith("BinaryPropertyList") for f_ in fs):
        return "BinaryPropertyList"
    if any(f_ in ("System/Syscall.swift", "System/Errno.swift") for f_ in fs):
        return None
    return t.split(".")[0]
coarse_pairs = set()
for (ta, tb) in pairs:
    if [ta, tb] in hops:
        coarse_pairs.add((ta, tb))
        continue
    ca, cb = coarse(ta, files_of_type.get(ta, ())), coarse(tb, files_of_type.get(tb, ()))
    if ca is not None and cb is not None and ca != cb:
        coarse_pairs.add((ca, cb))
coarse_files = set()
for f_ in families:
    if f_ in ("System/Syscall.swift", "System/Errno.swift"):
        continue
    coarse_files.add("Storage/BinaryPropertyList.swift" if os.path.basename(f_).startswith("BinaryPropertyList") else f_)
print(f"#   counted as issue 23 counted the code before the rebuild: {len(coarse_pairs)} crossings, {len(coarse_files)} files")
print("#     " + ", ".join(f"{a} -> {b}" for a, b in sorted(coarse_pairs)))
