"""Rules about registering hooks: HS111, HS112, HS113, HS114."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hookscope.lint.engine.findings import Finding
from hookscope.lint.python.facts import known
from hookscope.lint.python.parse.bindings import child_nodes, dotted, walk
from hookscope.lint.python.parse.pyfile import CallSite, Scope
from hookscope.lint.python.rules.analysis import Analysis, PythonRule, attribute_name_edit

# Registration functions that return a RemovableHandle (module, global, tensor,
# autograd and optimizer hooks). Others named alike return nothing and are left
# alone: DDP's ``register_comm_hook``, Tensor's ``register_hook`` (dies with the tensor).
_MODULE_HOOKS = ("forward", "forward_pre", "full_backward", "full_backward_pre", "backward")
_OTHER_HOOKS = known.words(
    """
    state_dict_pre state_dict_post load_state_dict_pre load_state_dict_post
    post_accumulate_grad multi_grad step_pre step_post
    module_buffer_registration module_module_registration module_parameter_registration
    """
)
HANDLE_RETURNING = frozenset(
    {f"register_{kind}_hook" for kind in _MODULE_HOOKS}
    | {f"register_module_{kind}_hook" for kind in _MODULE_HOOKS}
    | {f"register_{kind}_hook" for kind in _OTHER_HOOKS}
)
_APPENDERS = frozenset({"append", "add", "extend", "insert", "appendleft", "setdefault", "update"})
_DEPRECATED = {
    "register_backward_hook": "register_full_backward_hook",
    "register_module_backward_hook": "register_module_full_backward_hook",
}


def hook_registrations(analysis: Analysis) -> Iterator[tuple[CallSite, str]]:
    """Every ``x.register_*_hook(...)`` (or bare ``register_*_hook(...)``) call and its name."""
    for site in analysis.file.calls:
        func = site.node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in HANDLE_RETURNING:
            yield site, name


class DiscardedHandleRule(PythonRule):
    """HS111: the handle of a registered hook is thrown away."""

    code = "HS111"
    name = "discarded-hook-handle"
    message = (
        "the handle returned by `{call}` is discarded, so this hook can never be removed. "
        "Keep it (`handle = ...`) and call `handle.remove()` when done, or use `with hookscope.session(...)`."
    )

    def check(self, analysis: Analysis) -> Iterator[Finding]:
        for site, name in hook_registrations(analysis):
            if isinstance(site.parent, ast.Expr) and not site.loops:
                yield analysis.finding(type(self), site.node, call=f"{name}(...)")


class HookInLoopRule(PythonRule):
    """HS112: hooks registered in a loop and never removed pile up."""

    code = "HS112"
    name = "hook-registered-in-loop"
    message = (
        "`{call}` runs in a loop and its handle is {where}, so hooks pile up on every iteration. "
        "Collect the handles and remove each one (or use `hookscope.session`)."
    )

    def check(self, analysis: Analysis) -> Iterator[Finding]:
        for site, name in hook_registrations(analysis):
            if not site.loops:
                continue
            where = _unremoved(site, analysis)
            if where:
                yield analysis.finding(type(self), site.node, call=f"{name}(...)", where=where)


def _unremoved(site: CallSite, analysis: Analysis) -> str:
    """Why the handle is never removed, or ``""`` when a removal (or escape) is visible."""
    parent = site.parent
    if isinstance(parent, ast.Expr):
        return "discarded"
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute):
        if parent.func.attr in _APPENDERS and site.node in parent.args:
            sink = dotted(parent.func.value)
            if sink and not _used_elsewhere(sink, site.scope, analysis):
                return f"only ever added to `{sink}`"
        return ""
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        target = parent.targets[0]
        if isinstance(target, ast.Subscript):
            sink = dotted(target.value)
            if sink and not _used_elsewhere(sink, site.scope, analysis):
                return f"only ever stored in `{sink}`"
            return ""
        sink = dotted(target)
        if (
            isinstance(target, ast.Attribute)
            and sink
            and sink.split(".")[0] in _stored_in(site.loops[-1])
        ):
            return ""  # reg.handle = ... on an object made in this iteration
        if sink and not _loaded_in(site.loops[-1], sink):
            return f"overwritten on each iteration of `{sink}`"
    return ""


def _stored_in(loop: ast.AST) -> set[str]:
    """Names (re)bound on each iteration of ``loop``: its target and its assignments."""
    return {
        n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def _loaded_in(root: ast.AST, sink: str) -> bool:
    return any(_loads(node) and dotted(node) == sink for node in ast.walk(root))


def _loads(node: ast.AST) -> bool:
    return isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load)


def _used_elsewhere(sink: str, scope: Scope, analysis: Analysis) -> bool:
    """Is ``sink`` read anywhere in its scope other than to add items to it?"""
    used = _used_in_scope(sink, scope, analysis)
    if not used:
        analysis.unsure()  # the use may sit in a method or statement the mask dropped
    return used


def _used_in_scope(sink: str, scope: Scope, analysis: Analysis) -> bool:
    root: ast.AST = (
        scope.cls if sink.startswith(f"{scope.self_name}.") and scope.cls else scope.node
    )
    if sink.split(".")[0] not in _local_names(scope) and root is scope.node and scope.parent:
        root = analysis.file.tree  # a global or closure variable: look everywhere
    for parent in walk(root):
        for node in child_nodes(parent):
            appends = isinstance(parent, ast.Attribute) and parent.attr in _APPENDERS
            if _loads(node) and not appends and dotted(node) == sink:
                return True
    return False


def _local_names(scope: Scope) -> set[str]:
    return {a.arg for a in ast.walk(scope.node) if isinstance(a, ast.arg)} | _stored_in(scope.node)


class DeprecatedBackwardHookRule(PythonRule):
    """HS113: ``register_backward_hook`` is deprecated and misses parts of ``grad_input``."""

    code = "HS113"
    name = "deprecated-backward-hook"
    message = (
        "`{name}` is deprecated: on modules with several operations it reports the gradient "
        "of the last operation only, so parts of `grad_input` are missing. Use `{new}`."
    )
    fixable = True

    def check(self, analysis: Analysis) -> Iterator[Finding]:
        for site, name in hook_registrations(analysis):
            new = _DEPRECATED.get(name)
            if new:
                edits = attribute_name_edit(analysis.file, site.node.func, new)
                yield analysis.finding(type(self), site.node, edits=edits, name=name, new=new)


class HookAfterCompileRule(PythonRule):
    """HS114: a hook registered on a module after it went through ``torch.compile``."""

    code = "HS114"
    name = "hook-after-compile"
    message = (
        "`{call}` registers a hook on `{target}` after `{target}` was passed to `torch.compile` "
        "(line {line}); the compiled graph may not run it. Register hooks before compiling."
    )

    def check(self, analysis: Analysis) -> Iterator[Finding]:
        compiled: dict[int, list[tuple[int, str]]] = {}
        for site in analysis.file.calls:
            for target in _compile_targets(site):
                compiled.setdefault(id(site.scope.node), []).append((site.node.lineno, target))
        if not compiled:
            return
        for site, name in hook_registrations(analysis):
            func = site.node.func
            receiver = dotted(func.value) if isinstance(func, ast.Attribute) else None
            for line, target in compiled.get(id(site.scope.node), []):
                if (
                    receiver
                    and line < site.node.lineno
                    and (receiver == target or receiver.startswith(target + "."))
                ):
                    yield analysis.finding(
                        type(self), site.node, call=f"{name}(...)", target=target, line=str(line)
                    )
                    break


def _compile_targets(site: CallSite) -> list[str]:
    """Names that hold a compiled module after this call: its argument and assignees."""
    call = site.node
    func_path = dotted(call.func) or ""
    targets: list[str] = []
    if func_path == "torch.compile" and call.args:
        targets.append(dotted(call.args[0]) or "")
    elif isinstance(call.func, ast.Attribute) and call.func.attr == "compile" and not call.args:
        targets.append(dotted(call.func.value) or "")
    else:
        return []
    if isinstance(site.parent, ast.Assign):
        targets.extend(dotted(t) or "" for t in site.parent.targets)
    return [t for t in targets if t]


RULES = (DiscardedHandleRule, HookInLoopRule, DeprecatedBackwardHookRule, HookAfterCompileRule)
