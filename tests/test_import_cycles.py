"""The core's modules import one another in one direction only: no import circle (such as
the old comparison -> listing -> runner -> plots -> comparison), counting the imports
inside functions too. grimp (import-linter's graph builder) reads the imports statically."""

import grimp


def core_import_graph() -> dict[str, set[str]]:
    # imports for annotations only run nowhere (as in the layers contract, pyproject.toml)
    graph = grimp.build_graph(
        "zoo", include_external_packages=False, exclude_type_checking_imports=True
    )
    core = {
        m
        for m in graph.modules
        if m != "zoo" and not m.startswith(("zoo.plugins", "zoo.pipelines"))
    }
    return {m: graph.find_modules_directly_imported_by(m) & core for m in core}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import circle (as a list of modules, first repeated at the end), or None."""
    state, stack = {}, []  # state: 1 while on the DFS stack, 2 when done

    def visit(module):
        state[module] = 1
        stack.append(module)
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                return stack[stack.index(target) :] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(edges):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def test_finds_a_cycle_when_there_is_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_core_has_no_import_cycle():
    edges = core_import_graph()
    assert {
        "zoo.train.plan",
        "zoo.core.loading",
        "zoo.comparison.table",
        "zoo.api.entry_rows",
    } <= set(edges)
    cycle = find_cycle(edges)
    assert cycle is None, " -> ".join(cycle)
