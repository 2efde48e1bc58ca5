"""What ``self`` attributes are bound to: ``self.x = ...`` in a class's methods, ``x: T`` in
its body, ``setattr(self, name, value)`` and ``self.__dict__.update(locals())``."""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.bindings import Binding, dotted, own_nodes, scope_bindings


def class_attributes(cls: ast.ClassDef) -> dict[str, list[Binding]]:
    """``self.x = ...`` in the class's methods and ``x: T`` / ``x = ...`` in its body."""
    out: dict[str, list[Binding]] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            out.setdefault(stmt.target.id, []).append(Binding("annotation", stmt.annotation, cls))
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(Binding("value", stmt.value, cls))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _method_attributes(stmt, out)
    return out


def _method_attributes(
    method: ast.FunctionDef | ast.AsyncFunctionDef, out: dict[str, list[Binding]]
) -> None:
    args = [*method.args.posonlyargs, *method.args.args]
    if not args:
        return
    self_name = args[0].arg
    for node in own_nodes(method.body):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and _is_self_attr(target, self_name):
                    out.setdefault(target.attr, []).append(Binding("value", node.value, method))
                elif isinstance(target, (ast.Tuple, ast.List)):  # self.a, self.b = make()
                    values = node.value.elts if isinstance(node.value, ast.Tuple) else None
                    for i, elt in enumerate(target.elts):
                        if isinstance(elt, ast.Attribute) and _is_self_attr(elt, self_name):
                            bound = (
                                Binding("value", values[i], method)
                                if values is not None and len(values) == len(target.elts)
                                else Binding("unpacked", node.value, method, position=i)
                            )
                            out.setdefault(elt.attr, []).append(bound)
        elif isinstance(node, ast.AnnAssign) and _is_self_attr(node.target, self_name):
            attr = node.target.attr  # type: ignore[union-attr]  # checked by _is_self_attr
            out.setdefault(attr, []).append(Binding("annotation", node.annotation, method))
        elif isinstance(node, ast.Call):
            named = _set_by_name(node, self_name)
            if named is not None:
                out.setdefault(named[0], []).append(Binding("value", named[1], method))
            elif _keeps_locals(node, self_name):
                for name, local in scope_bindings(method).items():
                    if name != self_name:
                        out.setdefault(name, []).extend(local)


def _keeps_locals(call: ast.Call, self_name: str) -> bool:
    """``self.__dict__.update(locals())``: every local of the method becomes an attribute
    of that name (yolov5's ``DetectMultiBackend``)."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "update"
        and _is_self_attr(func.value, self_name)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "__dict__"
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Call)
        and dotted(call.args[0].func) == "locals"
    )


def _set_by_name(call: ast.Call, self_name: str) -> tuple[str, ast.expr] | None:
    """``(attribute, value)`` of ``setattr(self, "name", value)``, ``self.add_module("name",
    value)``, ``self.register_module(...)``; an f-string name keeps its fields
    (``layer_{i}``), which a ``getattr(self, f"layer_{j}")`` matches by its prefix."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "setattr" and len(call.args) == 3:
        owner, name, value = call.args
        if not (isinstance(owner, ast.Name) and owner.id == self_name):
            return None
    elif (
        isinstance(func, ast.Attribute)
        and func.attr in ("add_module", "register_module")
        and _is_self_attr(func, self_name)
        and len(call.args) == 2
    ):
        name, value = call.args
    else:
        return None
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return name.value, value
    if isinstance(name, ast.JoinedStr) and name.values:
        first = name.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value:
            return ast.unparse(name)[2:-1], value  # ``f"layer_{i}"`` -> ``layer_{i}``
    prefix = name_prefix(name)  # ``"net_D_" + key``, ``"net_DT%d" % n`` -> ``net_D_{...}``
    return (prefix + "{...}", value) if prefix else None


def name_prefix(name: ast.expr) -> str:
    """The constant start of a name built at run time: ``"layer_" + key``, ``"layer%d" %
    i``, ``"layer_{}".format(i)``, ``f"layer_{i}"`` give ``layer_``; ``""`` otherwise."""
    if isinstance(name, ast.JoinedStr) and name.values:
        first = name.values[0]
        return (
            first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
        )
    if isinstance(name, ast.BinOp) and isinstance(name.op, ast.Add):
        left = name.left
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            return left.value
        return name_prefix(left)
    template, stop = "", ""
    if isinstance(name, ast.BinOp) and isinstance(name.op, ast.Mod):
        template, stop = _constant_str(name.left), "%"
    elif (
        isinstance(name, ast.Call)
        and isinstance(name.func, ast.Attribute)
        and name.func.attr == "format"
    ):
        template, stop = _constant_str(name.func.value), "{"
    return template.split(stop, 1)[0] if stop and stop in template else ""


def _constant_str(node: ast.expr) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _is_self_attr(node: ast.AST, self_name: str) -> bool:
    if isinstance(node, ast.Attribute):
        node = on_instance(node) or node  # ``self.__class__._model = ...``
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
    )


def on_instance(expr: ast.Attribute) -> ast.Attribute | None:
    """``obj.x`` for ``obj.__class__.x`` or ``type(obj).x`` (a class attribute read or
    set through the instance's class: a lazily cached model), else ``None``."""
    owner = expr.value
    if isinstance(owner, ast.Attribute) and owner.attr == "__class__":
        inner = owner.value
    elif (
        isinstance(owner, ast.Call)
        and dotted(owner.func) == "type"
        and len(owner.args) == 1
        and not owner.keywords
    ):
        inner = owner.args[0]
    else:
        return None
    if not isinstance(inner, ast.Name):
        return None
    return ast.copy_location(ast.Attribute(value=inner, attr=expr.attr, ctx=ast.Load()), expr)
