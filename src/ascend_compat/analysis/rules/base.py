"""What a rule module is: its :class:`Rule` record and the hooks the analysis calls.

A rule module (any module of :mod:`ascend_compat.analysis.rules` that defines ``RULE``) holds:

* ``RULE``: a :class:`Rule` (stable id, category, default handling, texts; ``order`` places it
  in listings);
* ``TRIGGERS``: lower-case words, one of which is in the text of everything the rule reports
  (the scanner's prefilter is the union of every rule's triggers, so it cannot disagree with the
  rules); ``TRIGGER_PATTERNS``: compiled regular expressions matched on the lower-cased text, for
  triggers that are not fixed words; ``TRIGGER_STRINGS``: lower-case prefixes a string literal starts
  with (found right after its opening quote: the rule reports such a string only when it starts with
  one); ``TRIGGER_IMPORTS``: top-level module names whose import makes a file relevant by itself;
  ``FOLLOWED_MEMBERS``: names of classes whose members the rule reports (``ReduceOp``): a name bound to one
  (``R = dist.ReduceOp``) is followed, since its uses (``R.AVG``) hold no trigger word; ``FOLLOWED_MODULES``:
  modules some members of which the rule reports (``deepspeed``, for ``deepspeed.ops``): a name bound to one is
  followed;
* detection hooks, all optional (``v`` is the file's :class:`~ascend_compat.analysis.visitor.PyAnalyzer`):
  ``qualname(q, version) -> (rule, handling, message, suggestion) | None`` for resolved names
  (``torch.backends.cudnn.benchmark``), ``on_call(v, node, q, attr)``, ``on_attribute(v, node, q)``,
  ``on_joined(v, node, head)`` (an f-string whose first part is the literal ``head``),
  ``on_string(v, node, s, role)`` (role: ``"value"``, ``"key"`` of a subscript or dict,
  ``"compare"`` operand, ``"env"`` argument of an environment getter; ``STRING_ROLES`` limits the roles
  it is called for), ``on_compare(v, node,
  operands)``, ``on_import(v, node, module, names) -> bool`` (True = the import line is reported),
  ``on_assign(v, node, targets, value, augmented)`` (``=``, ``:=``-free assignments and ``+=``),
  ``on_return(v, node, function_name)`` (a ``return`` with a value, after the value is visited),
  ``on_def(v, node)`` (a function definition, after its decorators and before its body);
* for files that are not Python: ``FILE_KINDS`` (``"cuda-source"``, ``"cmake"``, ``"cpp"``) and
  ``on_file(path, kind, text) -> list of Finding``;
* the verdict, read from the knowledge layer (:mod:`ascend_compat.knowledge`) where it has one;
* an optional rewrite for ``migrate`` (strings only, no libcst here): ``rewrite_string(body) ->
  str | None`` for string literals the rule reported, ``REWRITE_METHOD``/``REWRITE_ATTR`` (``(old, new)``
  name of a reported method call such as ``.cuda()`` / attribute such as ``.is_cuda``), ``rewrite_qualname(dotted,
  version) -> str | None`` for reported attribute chains, ``rewrite_import(module) -> str | None``
  for ``from MODULE import ...`` lines; ``REWRITE_NEEDS_TORCH_NPU`` (default True): whether the
  rewritten code needs ``import torch_npu``; or ``rewrite_needs_torch_npu(finding) -> bool`` to decide per finding (a rewritten
  comparison creates nothing on the NPU).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ascend_compat.knowledge.records import AUTO, MANUAL, PARTIAL

HANDLINGS = (AUTO, PARTIAL, MANUAL)
#: what a ``qualname`` hook returns: (rule id, handling, message, suggestion)
Classified = Tuple[str, str, str, str]


@dataclass(frozen=True)
class Rule:
    """A rule's identity and texts. ``handling`` says what happens on Ascend without editing the code:
    ``auto`` (the shim translates it), ``partial`` (it runs, semantics/numerics/speed differ),
    ``manual`` (it fails or stays on CUDA semantics). A finding may override it."""

    id: str
    category: str
    handling: str
    title: str
    #: why / what happens on Ascend (the rule's help text in SARIF and --list-rules)
    explanation: str
    #: default suggestion naming the NPU form
    suggestion: str
    #: position in listings (lower first)
    order: int = 1000


def const_str(node) -> Optional[str]:
    """The value of a string constant node, else None."""
    import ast

    if type(node) is ast.Constant and type(node.value) is str:
        return node.value
    return None
