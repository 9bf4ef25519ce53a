"""The design's layering (DESIGN.md, "Layering"), checked on the source: every import statement of the library, at
module level or inside a function, parsed with `ast`.

Data flows logs -> specs -> envs -> adapters -> router: the library (trace_envs) never imports training
(adapters_train), which it reaches only through its seam; training reads no mining, routing evaluation or data sets;
the gym.make path (registry) and the runtime know nothing of the generator, the miner or the trainer; checks are pure
functions of a trace; mining never imports training; no library module imports the CLI; the training modules import
each other without a cycle.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ("trace_envs", "adapters_train")


def module_name(path: Path) -> str:
    """`trace_envs/cli/__init__.py` -> `trace_envs.cli`, `adapters_train/grpo.py` -> `adapters_train.grpo`."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def library_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in LIBRARY for p in sorted((ROOT / pkg).rglob("*.py"))}


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The library modules `path` imports anywhere in it (lazy imports inside functions included); `from a import b`
    counts as importing `a.b` when that is a module, else `a`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            # `import a.b.c` of a module outside the library, or of a library module: keep library ones only
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    mods = library_modules()
    known = set(mods)
    return {name: imports_of(path, name, known) for name, path in mods.items()}


GRAPH = import_graph()


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def violations(sources: str | tuple[str, ...], forbidden: tuple[str, ...], graph: dict[str, set[str]] = GRAPH) -> list[str]:
    """Every `source -> target` import where source is under one of `sources` and target under one of `forbidden`."""
    sources = (sources,) if isinstance(sources, str) else sources
    return sorted(
        f"{src} -> {dst}"
        for src, dsts in graph.items()
        if any(_under(src, s) for s in sources)
        for dst in dsts
        if any(_under(dst, f) for f in forbidden)
    )


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle in `graph` (as the list of modules around it), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_parser_sees_module_level_lazy_and_package_imports() -> None:
    """The graph the rules run on is the real one (a rule over an empty graph would pass for nothing)."""
    assert len(GRAPH) > 80
    assert "trace_envs.runtime.base" in GRAPH["trace_envs.envs_loader"]  # module level, `from a.b import c`
    assert "trace_envs.mining.pipeline" in GRAPH["trace_envs.pipeline"]  # a lazy import inside a method
    assert "trace_envs.routing.planted" in GRAPH["trace_envs.pipeline"]
    assert "adapters_train.sft" in GRAPH["adapters_train.grpo"]  # lazy, inside train_grpo
    assert "trace_envs.training" in GRAPH["adapters_train.provider"]  # training imports the library's seam
    assert "trace_envs.cli" in GRAPH["trace_envs.__main__"]  # a package's __init__
    assert "trace_envs.routing.index" in GRAPH["trace_envs.routing"]  # a package's __init__ re-exporting
    assert violations("trace_envs.pipeline", ("trace_envs.mining",))  # the rule finder reports what it is shown


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_training_imports_no_mining_routing_evaluation_data_sets_or_cli() -> None:
    forbidden = ("trace_envs.mining", "trace_envs.routing.planted", "trace_envs.datasets", "trace_envs.cli")
    assert violations("adapters_train", forbidden) == []


def test_the_gym_make_path_and_the_runtime_know_no_generator_miner_or_trainer() -> None:
    forbidden = ("trace_envs.generate", "trace_envs.mining", "adapters_train")
    assert violations(("trace_envs.registry", "trace_envs.runtime", "trace_envs.envs_loader"), forbidden) == []


def _is_detector(module: str) -> bool:
    return module.startswith("trace_envs.families.") and module.rpartition(".")[2] == "detector"


TASKS = sorted(m for m in GRAPH if _under(m, "trace_envs.families") and not _is_detector(m))


def test_every_family_has_its_task_and_its_detector_side_by_side() -> None:
    packages = sorted({m.rsplit(".", 1)[0] for m in GRAPH if _is_detector(m)})
    assert len(packages) >= 13
    assert all(f"{p}.task" in GRAPH and p in GRAPH for p in packages)


def test_runtime_checks_and_tasks_import_no_mining_and_no_detector() -> None:
    """A family's task (params, scenario, env, check), the runtime and the checks know nothing of how the miner finds
    the family: the labelers, proposal rules and parameter inference live in detectors and `trace_envs.mining`."""
    sources = [m for m in GRAPH if _under(m, "trace_envs.runtime") or _under(m, "trace_envs.checks") or m in TASKS]
    assert len(sources) > 40
    assert sorted(f"{src} -> {dst}" for src in sources for dst in GRAPH[src]
                  if _under(dst, "trace_envs.mining") or _is_detector(dst)) == []


def test_the_gym_make_path_stays_clean_through_what_it_imports() -> None:
    """Transitively too: nothing `import trace_envs` pulls in (registry, loader, runtime, the families' tasks and what
    they import) reaches the generator, the miner, a detector or the trainer."""
    seen, todo = set(), ["trace_envs", "trace_envs.registry", "trace_envs.runtime", *TASKS]
    while todo:
        mod = todo.pop()
        if mod not in seen:
            seen.add(mod)
            todo += GRAPH.get(mod, ())
    bad = sorted(m for m in seen if any(_under(m, f) for f in ("trace_envs.generate", "trace_envs.mining", "adapters_train"))
                 or _is_detector(m))
    assert bad == []


def test_gym_make_of_every_committed_env_loads_no_mining_code() -> None:
    """The same, as the interpreter sees it: making every bundled env loads no module of the miner, no detector and
    no generator (a fresh interpreter, so the test session's imports do not count)."""
    code = ("import sys, gymnasium as gym, trace_envs; from trace_envs.registry import registered_ids; "
            "[gym.make(e) for e in registered_ids()]; "
            "print(sorted(m for m in sys.modules if m.startswith(('trace_envs.mining', 'trace_envs.generate', "
            "'adapters_train')) or (m.startswith('trace_envs.families.') and m.endswith('.detector'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_checks_import_no_runtime_env_or_generator() -> None:
    forbidden = ("trace_envs.runtime", "trace_envs.registry", "trace_envs.envs_loader", "trace_envs.generate",
                 "trace_envs.families", "trace_envs.integrations")
    assert violations("trace_envs.checks", forbidden) == []


def test_no_library_module_imports_the_training_package() -> None:
    """Training depends on the library, never the reverse: the CLI and the pipeline reach it through the seam
    (`trace_envs.training`, an entry point), at module level, lazily or in any other way."""
    assert violations("trace_envs", ("adapters_train",)) == []


def strings_naming(source: str, word: str) -> list[int]:
    """The lines of `source` with a string literal (docstrings aside) that holds `word`."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and word in node.value
            and id(node) not in docstrings]


def test_no_library_module_names_the_training_package_to_import_it_some_other_way() -> None:
    """No `importlib.import_module("adapters_train...")`, `__import__`, entry point built by hand or any other string
    that holds the package's name, outside docstrings, in any `trace_envs` module."""
    found = [f"{name}:{line}" for name, path in library_modules().items() if _under(name, "trace_envs")
             for line in strings_naming(path.read_text(encoding="utf-8"), "adapters_train")]
    assert found == []


def test_the_string_rule_sees_a_string_import_and_not_a_docstring() -> None:
    source = ('"""Mentions adapters_train."""\nimport importlib\n\n\ndef f():\n    """adapters_train too."""\n'
              '    return importlib.import_module("adapters_train.grpo")\n')
    assert strings_naming(source, "adapters_train") == [7]


def test_mining_never_imports_training() -> None:
    assert violations("trace_envs.mining", ("adapters_train",)) == []


def test_no_library_module_imports_the_cli() -> None:
    importers = sorted(src for src, dsts in GRAPH.items() if any(_under(d, "trace_envs.cli") for d in dsts))
    assert [m for m in importers if not _under(m, "trace_envs.cli") and m != "trace_envs.__main__"] == []


def test_training_modules_import_each_other_without_a_cycle() -> None:
    training = {src: {d for d in dsts if _under(d, "adapters_train") and d != "adapters_train"}
                for src, dsts in GRAPH.items() if _under(src, "adapters_train")}
    assert find_cycle(training) is None


@pytest.mark.parametrize("name", ["toy", "pipeline"])
def test_test_doubles_and_the_pipeline_are_not_in_the_training_package(name: str) -> None:
    assert f"adapters_train.{name}" not in GRAPH


# ---- one reading of language ----------------------------------------------------------------------------------------

LANGUAGE = "trace_envs.language"


def test_the_language_package_imports_nothing_from_the_library_but_itself() -> None:
    """The bottom layer: the scripted user, the checks and the labelers import it; it imports none of them."""
    assert any(_under(m, LANGUAGE) for m in GRAPH)
    assert violations(LANGUAGE, LIBRARY, {s: {d for d in ds if not _under(d, LANGUAGE)} for s, ds in GRAPH.items()}) == []


def test_the_language_package_imports_only_the_standard_library() -> None:
    """Nothing but the standard library: a spec's patterns are compiled on RE2 by the checks and handed in."""
    import sys

    outside = []
    for path in sorted((ROOT / "trace_envs" / "language").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            outside += [f"{path.name}: {n}" for n in names
                        if n.split(".")[0] not in sys.stdlib_module_names and not _under(n, LANGUAGE)]
    assert outside == []


# Phrasings that tell a refusal ("can't", "unable"), a confirmation ("confirm", "proceed", "shall I") or a progress turn
# ("let me", "one moment", "hold on"); "let me know" asks, it is no progress.
TELLTALE = re.compile(
    r"can't|can’t|cannot|can not|unable|not able|confirm|proceed|go ahead|shall i|let me(?! know)|one moment|hold on|"
    r"hang on|bear with me|please wait|right away|sorry, but",
    re.IGNORECASE,
)
_REGEX_SYNTAX = re.compile(r"\\[bswdBSW]|\(\?|\|")
_RE_CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
_NAME = re.compile(r"^[A-Za-z_]\w*$")


def _texts(node: ast.AST) -> list[str]:
    """The literal text of a string expression: a constant, the literal parts of an f-string, a concatenation."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [t for v in node.values for t in _texts(v)]
    if isinstance(node, ast.BinOp):
        return _texts(node.left) + _texts(node.right)
    return []


def _wordlike(text: str) -> bool:
    """An entry of a word list: a word or a short phrase; neither an utterance ("Yes, please go ahead.") nor a name
    (`Confirmation`, `no_confirmation`)."""
    if _NAME.match(text) and (text != text.lower() or "_" in text):
        return False
    return len(text) <= 40 and len(text.split()) <= 4 and not text.rstrip().endswith((".", "!", "?"))


def phrasing_copies(source: str) -> list[tuple[int, str, str]]:
    """(line, tell-tale, text) for every regex or word list in `source` that holds a refusal, confirmation or
    progress phrasing: the pattern of a `re`/`re2` call, any string written as a regex (`\\b`, `(?`, `|`), the
    entries of a literal tuple, list or set of two or more words, the words of `"...".split()`, the argument of
    `startswith`/`endswith`, and a word tested with `in`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        texts: list[str] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if isinstance(func.value, ast.Name) and func.value.id in ("re", "re2") and func.attr in _RE_CALLS and node.args:
                texts += _texts(node.args[0])
            if func.attr == "split" and isinstance(func.value, ast.Constant) and isinstance(func.value.value, str):
                texts += func.value.value.split()
            if func.attr in ("startswith", "endswith") and node.args:
                arg = node.args[0]
                texts += [t for e in (arg.elts if isinstance(arg, ast.Tuple) else [arg]) for t in _texts(e)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _REGEX_SYNTAX.search(node.value):
            texts.append(node.value)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2 and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            texts += [e.value for e in node.elts if _wordlike(e.value)]
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            texts += [t for t in _texts(node.left) if _wordlike(t)]
        found += [(node.lineno, m.group(0), t) for t in texts if (m := TELLTALE.search(t))]
    return sorted(set(found))


def test_the_language_package_is_the_only_home_of_refusal_confirmation_and_progress_patterns() -> None:
    copies = [
        f"{path.relative_to(ROOT)}:{line}: {word!r} in {text[:80]!r}"
        for name, path in library_modules().items() if not _under(name, LANGUAGE)
        for line, word, text in phrasing_copies(path.read_text(encoding="utf-8"))
    ]
    assert copies == [], "phrasings outside trace_envs/language:\n" + "\n".join(copies)


def test_the_phrasing_scan_finds_a_planted_copy_and_names_its_line() -> None:
    """The scan is no rule over nothing: a copy of each kind, planted in a module, is reported at its line."""
    planted = '''import re
REFUSAL = re.compile(r"(i can't|i am unable to) (help|do) that")
WAITS = ("let me check", "one moment")
def asks(text):
    return "proceed" in text or re.search("shall i", text) or text.startswith("please confirm")
DECLINES = frozenset("cannot unable".split())
PATTERN = rf"(?i)\\b(go ahead|{1})\\b"
'''
    found = phrasing_copies(planted)
    assert {line for line, _, _ in found} == {2, 3, 5, 6, 7}
    assert {(2, "can't"), (3, "let me"), (3, "one moment"), (5, "proceed"), (5, "shall i"), (5, "confirm"),
            (6, "cannot"), (7, "go ahead")} <= {(line, word.lower()) for line, word, _ in found}
    # what is said or named, not read: utterances, names, "let me know" (a question), a one-entry list
    said = '''import re
DONE = ("Yes, please go ahead.", "No, that's all.")
KINDS = ["no_confirmation", "Confirmation"]
ASK = re.compile(r"\\blet me know (which|what)")
requires = ["confirmed"]
'''
    assert phrasing_copies(said) == []
