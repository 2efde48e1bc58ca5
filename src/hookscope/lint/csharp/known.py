"""TorchSharp and .NET type names the C# resolver knows without seeing their source.

Used when the scanned tree does not hold TorchSharp itself; classes of the tree
always win over these names. The module names are TorchSharp's ``torch.nn`` and
``torchvision.models`` classes (TorchSharp commit c20b6a1c); names as generic as
``Encoder`` or ``Normalize`` are left out, since a project may mean its own.
"""

from __future__ import annotations


def names(text: str) -> frozenset[str]:
    """The names in ``text``, separated by white space."""
    return frozenset(text.split())


# Every TorchSharp module with hooks derives from one of these (hooks run in ``call``).
MODULE_ROOTS = frozenset({"HookableModule", "IModule", "HookableScriptModule"})
# Only their generic forms have hooks: ``Module<T, TResult>``, ``ScriptModule<T, TResult>``;
# plain ``Module`` (``ModuleList``, ``ParameterList``) and ``ScriptModule<TResult>`` have none.
GENERIC_ROOTS = frozenset({"Module", "ScriptModule"})
MODULES = names(
    """
    AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d
    AdaptiveMaxPool2d AdaptiveMaxPool3d AlexNet AlphaDropout AvgPool1d AvgPool2d
    AvgPool3d BCELoss BCEWithLogitsLoss BatchNorm BatchNorm1d BatchNorm2d
    BatchNorm3d Bilinear CELU CTCLoss ChannelShuffle ConstantPad1d ConstantPad2d
    ConstantPad3d Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d
    ConvTranspose3d Convolution ConvolutionTranspose CosineEmbeddingLoss
    CosineSimilarity CrossEntropyLoss Dropout Dropout1d Dropout2d Dropout3d ELU
    Embedding EmbeddingBag FeatureAlphaDropout Flatten Fold FractionalMaxPool2d
    FractionalMaxPool3d GELU GLU GRU GRUCell GaussianNLLLoss GoogleNet GroupNorm
    Hardshrink Hardsigmoid Hardswish Hardtanh HingeEmbeddingLoss HuberLoss
    ITransform Identity InceptionV3 InstanceNorm InstanceNorm1d InstanceNorm2d
    InstanceNorm3d KLDivLoss L1Loss LPPool1d LPPool2d LSTM LSTMCell LayerNorm
    LeakyReLU Linear LocalResponseNorm LogSigmoid LogSoftmax Loss MSELoss
    MarginRankingLoss MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d
    MaxUnpool3d Mish MobileNetV2 MobileNetV3
    MultiLabelMarginLoss MultiLabelSoftMarginLoss MultiMarginLoss
    MultiheadAttention NLLLoss NormBase PReLU PadBase PairwiseDistance
    ParameterLessModule PixelShuffle PixelUnshuffle
    PoissonNLLLoss RNN RNNCell RReLU ReLU ReLU6 ReflectionPad1d ReflectionPad2d
    ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d ResNet SELU
    Sequential SiLU Sigmoid SmoothL1Loss SoftMarginLoss Softmax Softmax2d Softmin
    Softplus Softshrink Softsign Tanh Tanhshrink Threshold Transformer
    TransformerDecoder TransformerDecoderLayer TransformerEncoder
    TransformerEncoderLayer TripletMarginLoss TripletMarginWithDistanceLoss
    Unflatten Unfold Upsample VGG WeightedLoss ZeroPad2d
    """
)
# Containers (modules without hooks), distributions.transforms (``forward`` is not a
# module call), exported programs,
# tensors and the .NET types a receiver commonly has.
NOT_MODULES = names(
    """
    ModuleDict ModuleList ParameterDict ParameterList
    AbsTransform Action AffineTransform CompilationUnit ComposeTransform Console
    DataLoader Dataset Delegate Device DisposeScope Distribution Exception
    ExpTransform ExportedProgram Func Generator IndepdenentTransform
    IterableDataset LRScheduler Lazy LogTransform Math Optimizer OptimizerHelper
    Parameter PowerTransform Random ReshapeTransform Scalar SigmoidTransform
    SoftmaxTransform SoftplusTransform Storage Stream StringBuilder TanhTransform
    Task Tensor Transform Type ValueTask bool byte char decimal double dynamic
    float int long nint nuint object sbyte short string uint ulong ushort var void
    """
)
# Static classes that qualify factories: ``torch.nn.Linear(...)``, ``torch.jit.load(...)``.
STATIC_CLASSES = names(
    """
    distributions export functional jit models nn optim torch torchaudio
    torchvision transforms utils
    """
)
# ``(qualifier, method)`` → the class returned, with the call's type arguments, for
# library calls outside the scanned tree: ``jit.load<T, TResult>`` → ScriptModule<T, TResult>.
CALLS = {
    ("jit", "load"): "ScriptModule",
    ("jit", "compile"): "CompilationUnit",
    ("export", "load"): "ExportedProgram",
    ("utils", "fuse_linear_bn_eval"): "Linear",
    ("utils", "fuse_conv_bn_eval"): "Conv2d",
}
# Methods whose result has the receiver's type (``m.to(device)``, ``m.cuda()``).
SAME_TYPE = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float", "double", "bfloat16"})
# Collections: ``x[i]`` and ``foreach`` give the last type argument.
SEQUENCES = names(
    """
    Collection ConcurrentBag ConcurrentQueue HashSet IAsyncEnumerable ICollection
    IEnumerable IList IReadOnlyCollection IReadOnlyList ISet ImmutableArray
    ImmutableList LinkedList List Memory ModuleList ObservableCollection Queue
    ReadOnlyCollection ReadOnlyMemory ReadOnlySpan SortedSet Span Stack
    """
)
# Maps: ``x[k]`` gives the value type, ``foreach`` a key/value pair.
MAPS = names(
    """
    ConcurrentDictionary Dictionary IDictionary IReadOnlyDictionary
    ImmutableDictionary OrderedDictionary SortedDictionary SortedList
    """
)
