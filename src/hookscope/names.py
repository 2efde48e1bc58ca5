"""Module names without wrapper noise.

Wrappers insert a component into every qualified name below them:
``DistributedDataParallel`` / ``DataParallel`` add ``module.``,
``torch.compile`` adds ``_orig_mod.``, FSDP1 adds ``_fsdp_wrapped_module.``
and activation-checkpoint / offload wrappers add
``_checkpoint_wrapped_module.`` / ``_offload_wrapped_module.``. Summary,
Monitor, doctor, capture and compare all report names as the user wrote
them in the unwrapped model, so they all go through this one module.

Two entry points:

- `clean_names(model)` looks at the module tree, so it strips ``module.``
  only below a real DDP / DataParallel wrapper (a user's own submodule
  called ``module`` keeps its name).
- `strip_wrappers(name)` works on a bare string (a recording read from disk,
  a name typed by a user): it removes the unambiguous wrapper components and,
  with ``leading_module=True``, a leading ``module.``.
"""

from __future__ import annotations

from torch import nn

from hookscope.modtree import walk

#: Components that only wrappers put into qualified names.
WRAPPER_COMPONENTS: frozenset[str] = frozenset(
    {"_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module", "_offload_wrapped_module"}
)

#: Wrapper class names whose child ``module`` is the wrapped model.
_MODULE_WRAPPERS = frozenset({"DistributedDataParallel", "DataParallel"})


def strip_wrappers(name: str, *, leading_module: bool = True) -> str:
    """Return ``name`` without wrapper components (``"_orig_mod.fc"`` -> ``"fc"``).

    Args:
        name: A qualified module or parameter name; ``""`` is the root.
        leading_module: Also drop a leading ``module.`` (DDP / DataParallel).
            Only safe when the name is known to come from such a wrapper.
    """
    parts = [part for part in name.split(".") if part and part not in WRAPPER_COMPONENTS]
    if leading_module and parts and parts[0] == "module":
        parts = parts[1:]
    return ".".join(parts)


def wrapped_child(module: nn.Module) -> str | None:
    """The attribute name under which ``module`` holds what it wraps, or None."""
    if type(module).__name__ in _MODULE_WRAPPERS and isinstance(
        getattr(module, "module", None), nn.Module
    ):
        return "module"
    children = module._modules  # a ScriptModule's has no .get
    for attr in WRAPPER_COMPONENTS:
        if attr in children and isinstance(children[attr], nn.Module):
            return attr
    return None


def is_wrapper(module: nn.Module) -> bool:
    """True when ``module`` only wraps another module (DDP, compile, FSDP1, checkpoint)."""
    return wrapped_child(module) is not None


def clean_names(model: nn.Module, *, keep_wrappers: bool = False) -> dict[str, str]:
    """Map every qualified name of ``model.named_modules()`` to its clean name.

    A wrapper and the module it wraps get the same clean name; callers that
    need one module per name keep the innermost (the one with
    ``is_wrapper(module)`` false). Shared modules appear under each of their
    names (``remove_duplicate=False``).

    Args:
        model: The (possibly wrapped) model.
        keep_wrappers: Return every name unchanged (the ``keep`` option of
            the features that use this).
    """
    out: dict[str, str] = {}

    def visit(module: nn.Module, raw: str, clean: str) -> None:
        out[raw] = clean
        skip = wrapped_child(module)
        for child_name, child in module._modules.items():
            if child is None:
                continue
            child_raw = f"{raw}.{child_name}" if raw else child_name
            if keep_wrappers or child_name != skip:
                child_clean = f"{clean}.{child_name}" if clean else child_name
            else:
                child_clean = clean
            visit(child, child_raw, child_clean)

    visit(model, "", "")
    return out


def clean_param_name(name: str, names: dict[str, str]) -> str:
    """Clean a parameter name (``"module.fc.weight"``) with the map from `clean_names`."""
    owner, _, leaf = name.rpartition(".")
    clean_owner = names.get(owner, strip_wrappers(owner, leading_module=False))
    return f"{clean_owner}.{leaf}" if clean_owner else leaf


class CleanNames:
    """The clean names of one model, for features that report per module or parameter.

    Args:
        model: the (possibly wrapped) model.
        keep_wrappers: report every name unchanged and every wrapper as a
            module of its own (the features' ``keep_wrappers`` option).

    Attributes:
        names: `clean_names` of the model.
        wrappers: ids of the wrapper modules (DDP, FSDP1, compile, checkpoint
            wrappers); empty with ``keep_wrappers``. A wrapper and the module
            it holds share one clean name: features report the inner one.
    """

    def __init__(self, model: nn.Module, *, keep_wrappers: bool = False) -> None:
        found = [] if keep_wrappers else [
            (name, module) for name, module in walk(model) if is_wrapper(module)
        ]  # fmt: skip
        if found:
            self.names = clean_names(model)
        else:  # no wrapper: every name is clean already
            self.names = {name: name for name, _ in walk(model, remove_duplicate=False)}
        self.wrappers = frozenset(id(module) for _, module in found)
        self._wrapper_names = [name for name, _ in found]

    def module(self, name: str) -> str:
        """The clean name of module ``name`` (``"module.fc"`` -> ``"fc"``)."""
        return self.names.get(name, name)

    def param(self, name: str) -> str:
        """The clean name of parameter or buffer ``name`` (``"module.fc.weight"`` -> ``"fc.weight"``)."""
        return clean_param_name(name, self.names) if self._wrapper_names else name

    def wrappers_above(self, name: str) -> int:
        """How many wrapper modules contain module ``name`` (to shift its depth)."""
        return sum(
            1 for w in self._wrapper_names if w != name and (not w or name.startswith(f"{w}."))
        )
