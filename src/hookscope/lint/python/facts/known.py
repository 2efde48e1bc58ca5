"""Facts about names the linter cannot see in the scanned tree."""

from __future__ import annotations

import re


def words(text: str) -> tuple[str, ...]:
    """The white-space separated names of ``text``, in order; ``#`` starts a comment."""
    return tuple(re.sub(r"#.*", "", text).split())


def names(text: str) -> frozenset[str]:
    """The set of `words` in ``text``."""
    return frozenset(words(text))


def by_package(text: str) -> dict[str, frozenset[str]]:
    """``{package: names}`` from `words` where a word ending in ``:`` names the package of
    the words after it (``pkg.sub: ClassA ClassB``)."""
    out: dict[str, set[str]] = {}
    for word in words(text):
        if word.endswith(":"):
            current = out.setdefault(word[:-1], set())
        else:
            current.add(word)
    return {package: frozenset(found) for package, found in out.items()}


# Every name of ``torch.nn.modules.__all__`` (torch 2.13), copied from that list so that
# linting never imports torch.
TORCH_NN_MODULES = names(
    """
    AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveLogSoftmaxWithLoss
    AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d AlphaDropout AvgPool1d AvgPool2d
    AvgPool3d BCELoss BCEWithLogitsLoss BatchNorm1d BatchNorm2d BatchNorm3d Bilinear CELU
    CTCLoss ChannelShuffle CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d
    ConstantPad3d Container Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d
    CosineEmbeddingLoss CosineSimilarity CrossEntropyLoss CrossMapLRN2d Dropout Dropout1d
    Dropout2d Dropout3d ELU Embedding EmbeddingBag FeatureAlphaDropout Flatten Fold
    FractionalMaxPool2d FractionalMaxPool3d GELU GLU GRU GRUCell GaussianNLLLoss GroupNorm
    Hardshrink Hardsigmoid Hardswish Hardtanh HingeEmbeddingLoss HuberLoss Identity
    InstanceNorm1d InstanceNorm2d InstanceNorm3d KLDivLoss L1Loss LPPool1d LPPool2d LPPool3d
    LSTM LSTMCell LayerNorm LazyBatchNorm1d LazyBatchNorm2d LazyBatchNorm3d LazyConv1d
    LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d
    LazyInstanceNorm1d LazyInstanceNorm2d LazyInstanceNorm3d LazyLinear LeakyReLU Linear
    LinearCrossEntropyLoss LocalResponseNorm LogSigmoid LogSoftmax MSELoss MarginRankingLoss
    MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d Mish Module ModuleDict
    ModuleList MultiLabelMarginLoss MultiLabelSoftMarginLoss MultiMarginLoss MultiheadAttention
    NLLLoss NLLLoss2d PReLU PairwiseDistance ParameterDict ParameterList PixelShuffle
    PixelUnshuffle PoissonNLLLoss RMSNorm RNN RNNBase RNNCell RNNCellBase RReLU ReLU ReLU6
    ReflectionPad1d ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d
    ReplicationPad3d SELU Sequential SiLU Sigmoid SmoothL1Loss SoftMarginLoss Softmax Softmax2d
    Softmin Softplus Softshrink Softsign SyncBatchNorm Tanh Tanhshrink Threshold Transformer
    TransformerDecoder TransformerDecoderLayer TransformerEncoder TransformerEncoderLayer
    TripletMarginLoss TripletMarginWithDistanceLoss Unflatten Unfold Upsample
    UpsamplingBilinear2d UpsamplingNearest2d ZeroPad1d ZeroPad2d ZeroPad3d
    """
)

# torch's module classes outside ``torch.nn.modules.__all__`` (fx, jit, compile, parallel,
# FSDP, export, swa_utils, the private bases and torch.ao.quantization's observers).
EXTERNAL_MODULES = names(
    """
    GraphModule ScriptModule RecursiveScriptModule OptimizedModule DistributedDataParallel
    DataParallel FullyShardedDataParallel FSDPModule InterpreterModule AveragedModel
    _Loss _WeightedLoss _ConvNd _ConvTransposeNd _NormBase _BatchNorm _InstanceNorm _DropoutNd
    _MaxPoolNd _AvgPoolNd _AdaptiveAvgPoolNd _AdaptiveMaxPoolNd
    ObserverBase _ObserverBase UniformQuantizationObserverBase AffineQuantizedObserverBase
    MinMaxObserver MovingAverageMinMaxObserver PerChannelMinMaxObserver
    MovingAveragePerChannelMinMaxObserver HistogramObserver FixedQParamsObserver
    PlaceholderObserver RecordingObserver NoopObserver ReuseInputObserver FakeQuantizeBase
    FakeQuantize FixedQParamsFakeQuantize FusedMovingAvgObsFakeQuantize
    """
)

# Functions that return a torch module (a model, a traced or scripted module).
MODULE_FACTORIES = names(
    """
    torch.hub.load hub.load create_feature_extractor symbolic_trace torch.fx.symbolic_trace
    torch.jit.script torch.jit.trace torch.jit.load jit.script jit.trace jit.load
    """
)

# Functions whose qualified name ends so: ``torchvision.models.feature_extraction.
# create_feature_extractor(...)`` returns a GraphModule.
MODULE_FACTORY_SUFFIXES = words(
    """
    .create_feature_extractor .symbolic_trace
    # torch.ao.quantization's FX flow returns GraphModules; quantize_dynamic a module
    .prepare_fx .prepare_qat_fx .convert_fx .convert_to_reference_fx .quantize_dynamic
    """
)

# Alternate constructors: ``Cls.from_pretrained(...)``, ``Cls.__new__(Cls)`` and
# Lightning's ``Cls.load_from_checkpoint(path)`` are instances of ``Cls``.
CONSTRUCTOR_PREFIXES = ("from_", "__new__", "load_from_checkpoint")

# Classes that are torch modules but refuse hooks, so ``.forward`` is their API:
# ``_RemoteModule.register_*_hook`` raises; its ``forward`` is the RPC entry point.
# ``@torch.jit.interface`` classes (marked so by the class index) are called through
# ``.forward()`` in TorchScript, where ``m(x)`` does not compile.
HOOKLESS_MODULES = frozenset({"RemoteModule", "_RemoteModule", "@torch.jit.interface"})

# Base classes known not to be torch modules.
NON_MODULE_BASES = names(
    """
    object Function FunctionCtx InplaceFunction Enum IntEnum Exception ABC Protocol NamedTuple
    dict list tuple set str int float Generic TypedDict
    # unittest's and pytest-style test case bases: a test class is not a module
    TestCase IsolatedAsyncioTestCase
    # huggingface_hub's mixins: a class built on them alone wraps a model, it is not one
    ModelHubMixin PyTorchModelHubMixin
    """
)

CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})

# Names whose kind is fixed here, whatever the scanned tree defines under them.
FIXED = HOOKLESS_MODULES | CONTAINERS

# Methods of a module that yield modules: ``for m in model.modules()``.
MODULE_ITERATORS = frozenset({"modules", "children"})
NAMED_MODULE_ITERATORS = frozenset({"named_modules", "named_children"})

# The unknown-receiver heuristic (documented in ``resolve.py``): identifiers that name
# RPC proxies, pipelines, compiled extensions, autograd contexts and the like.
NOT_MODULE_NAME = re.compile(
    r"(^|_)(rref|rpc|rpc_sync|rpc_async|remote|pipe|pipeline|pipelines|fn|func|function|ctx|"
    r"c|obj|cuda|ext|extension|kernel|op|ops|mobile|lite|tokenizer|processor|optimizer|"
    r"scheduler|cls|klass|super)($|_)",
    re.IGNORECASE,
)
MODULE_NAME = re.compile(
    r"model|module|net|layer|block|encoder|decoder|head|backbone|gm|embed|attn|attention|mlp|"
    r"conv|linear|norm|proj|stage|transformer|tower|classifier|expert|adapter|lm",
    re.IGNORECASE,
)

# Methods only ``torch.nn.Module`` has among the objects that have a ``forward``:
# ``x.parameters()`` next to ``x.forward(...)`` says ``x`` is a module (`evidence`).
# Left out: ``train``/``state_dict``/``to``/``cuda``, which trainers and tensors have
# too (optimizers have ``zero_grad`` and ``load_state_dict`` but no ``forward``).
MODULE_ONLY_METHODS = names(
    """
    parameters named_parameters buffers named_buffers modules named_modules children
    named_children register_forward_hook register_forward_pre_hook
    register_full_backward_hook register_full_backward_pre_hook register_backward_hook
    register_buffer register_parameter register_module add_module get_submodule
    get_parameter requires_grad_ load_state_dict eval zero_grad
    _call_impl  # the private body of ``Module.__call__``
    """
)

# Callables whose first argument is a module: ``DDP(model)`` says ``model`` is one.
MODULE_WRAPPERS = names(
    """
    DistributedDataParallel DDP DataParallel FullyShardedDataParallel FSDP fully_shard compile
    symbolic_trace
    # wrappers and converters that take a module and nothing else
    checkpoint_wrapper offload_wrapper convert_sync_batchnorm revert_sync_batchnorm
    AveragedModel ModelEmaV2 ModelEmaV3 MMDistributedDataParallel get_peft_model
    prepare_model_for_kbit_training quantize_dynamic prepare_fx prepare_qat_fx
    """
)

# Library functions whose first argument is a torch module, by the qualified name they are
# imported from (`hookscope.lint.python.resolution.uses`): a model summary, a FLOP counter, an exporter or
# tracer, an experiment tracker's gradient watch.
MODULE_TAKERS = names(
    """
    torchsummary.summary torchinfo.summary thop.profile ptflops.get_model_complexity_info
    fvcore.nn.FlopCountAnalysis fvcore.nn.flop_count fvcore.nn.parameter_count
    fvcore.nn.parameter_count_table wandb.watch torch.onnx.export torch.export.export
    torch.jit.trace torch.jit.script torch.nn.utils.prune.global_unstructured
    torch.nn.utils.fusion.fuse_conv_bn_eval
    """
)

# ``torch.distributed.rpc.RRef`` methods that give back the value the RRef holds, and those
# that give back an RPC proxy (``rref.rpc_sync().forward(x)`` runs on the owner, not here).
RREF_VALUE = frozenset({"to_here", "local_value"})
RREF_PROXY = frozenset({"rpc_sync", "rpc_async", "remote"})

# Calls that hand back the module they are given, wrapped or not: ``accelerator.prepare
# (model)``, ``accelerator.unwrap_model(model)``, ``fabric.setup_module(model)``,
# ``torch.ao.quantization.prepare(model)``. Only a module argument makes them a module.
MODULE_PASS_THROUGH = frozenset({"prepare", "prepare_model", "unwrap_model", "setup_module"})
# Calls that hand back their arguments in order, each wrapped: ``model, opt =
# accelerator.prepare(model, opt)``, ``model, opt = fabric.setup(model, opt)``.
PASS_THROUGH_TUPLES = frozenset({"prepare", "setup"})

# Library calls whose result's element 0 is a torch module whatever they are given:
# ``engine, opt, _, _ = deepspeed.initialize(model=model, ...)`` (a ``DeepSpeedEngine``,
# an ``nn.Module`` subclass, as DeepSpeed's documentation of ``initialize`` says).
FIRST_IS_MODULE = frozenset({"deepspeed.initialize"})
