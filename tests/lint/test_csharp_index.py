"""The C# class index (read without parsing) and C# type names."""

from __future__ import annotations

import pytest

from hookscope.lint.csharp.index import scan_csharp
from hookscope.lint.csharp.types import CsType, Hierarchy, element_type, parse_type
from hookscope.lint.engine.index import merge

SOURCE = b"""
using System;
namespace A.B
{
    /// <summary>Doc comment with { a brace.</summary>
    [Serializable]
    public sealed partial class Outer<T> : Base<T, (int, string)>, IThing where T : class
    {
        private const string Brace = "}{";
        private char c = '{';
        private static readonly long[] sizes = new long[] { 1, 2 };
        private Module<Tensor, (Tensor, Tensor)> pair = Make(x => { return x; });
        [Attr(Name = "x")] public Module<Tensor, Tensor> Layer { get; private set; } = Linear(1, 1);
        public Dictionary<string, Linear> Named => named;
        public Tensor this[int i] => items[i];
        public static Outer<T> Make<TOut>(string s, int k = 3) where TOut : struct { return null; }
        public Outer(int x) : base(x) { var s = $"{x}}}"; }
        public event EventHandler Changed;

        class Inner : Stage { private Stage stage; }
#if DEBUG
        protected virtual Tensor Debug() => x;
#endif
    }

    interface IThing { Tensor forward(Tensor x); }
    record Point(int X, int Y);
    public enum Color { Red, Green }
}
"""


def test_types_bases_and_members_are_indexed() -> None:
    entries = {name: (bases, dict(members)) for name, bases, members, _ in scan_csharp(SOURCE)}
    assert set(entries) == {"cs:Outer", "cs:Inner", "cs:IThing"}
    bases, members = entries["cs:Outer"]
    assert bases == ("Base<T,(int,string)>", "IThing")
    assert members == {
        "Brace": "string",
        "c": "char",
        "sizes": "long[]",
        "pair": "Module<Tensor,(Tensor,Tensor)>",
        "Layer": "Module<Tensor,Tensor>",
        "Named": "Dictionary<string,Linear>",
        "[]": "Tensor",
        "Make<1>()": "Outer<T>",
        "Changed": "EventHandler",
        "Debug()": "Tensor",
    }
    assert entries["cs:Inner"] == (("Stage",), {"stage": "Stage"})
    assert entries["cs:IThing"] == ((), {"forward()": "Tensor"})


def test_a_file_without_types_gives_nothing() -> None:
    assert scan_csharp(b"var x = 1; Console.WriteLine(x);") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Linear", CsType("Linear")),
        ("torch.nn.Module<Tensor, Tensor>?", CsType("Module", (CsType("Tensor"),) * 2)),
        ("Transform[]", CsType("Transform", array=True)),
        (
            "List<(string name, Module m)>",
            CsType("List", (CsType("", (CsType("string"), CsType("Module"))),)),
        ),
        ("global::Outer<int>.Inner", CsType("Inner")),
        ("Module<Tensor,", None),
        ("x + y", None),
    ],
)
def test_parse_type(text: str, expected: CsType | None) -> None:
    assert parse_type(text) == expected


def test_element_types() -> None:
    modules = parse_type("ModuleDict<Linear>")
    assert element_type(modules, indexed=True) == CsType("Linear")
    assert element_type(modules, indexed=False) == CsType("", (CsType("string"), CsType("Linear")))
    assert element_type(parse_type("Dictionary<string, Conv2d>"), indexed=True) == CsType("Conv2d")
    assert element_type(parse_type("Linear[]"), indexed=False) == CsType("Linear")
    assert element_type(parse_type("Linear"), indexed=True) is None


def test_hierarchy_follows_project_bases_and_known_types() -> None:
    index = merge(
        scan_csharp(
            b"class Block : Module<Tensor, Tensor> {}\n"
            b"class Deep : Block {}\n"
            b"class Plain {}\n"
            b"class Odd : External {}\n"
            b"class Loop : Loop2 {}\nclass Loop2 : Loop {}\n"
            b"class Linear : Plain {}\n"  # a project class shadows TorchSharp's name
        )
    )
    hierarchy = Hierarchy(index)
    verdicts = {
        name: hierarchy.is_module(CsType(name))
        for name in ("Deep", "Plain", "Odd", "Loop", "Linear", "Conv2d", "Tensor", "IFoo", "Foo")
    }
    assert verdicts == {
        "Deep": True,
        "Plain": False,
        "Odd": None,
        "Loop": None,
        "Linear": False,
        "Conv2d": True,
        "Tensor": False,
        "IFoo": False,
        "Foo": None,
    }
    assert hierarchy.is_module(CsType("Block", array=True)) is False
