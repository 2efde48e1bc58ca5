"""Facts about other libraries and frameworks: which of their classes are torch modules,
which functions build models, which run no torch hooks, which files are another
framework's. Keyed by the module a name is imported from, so that a project's own class
of the same name (a pydantic ``BaseModel``) is not taken for one.
"""

from __future__ import annotations

import ast
import re

from hookscope.lint.python.facts.known import by_package, names, words

# Frameworks with layers of their own (``keras.layers.Layer``, flax's ``linen.Module``).
OTHER_FRAMEWORKS = frozenset({"tensorflow", "keras", "tf_keras", "flax", "jax", "haiku", "mxnet"})
# Frameworks whose layers copy torch's ``Module`` API (``paddle.nn.Layer.eval()``,
# ``.parameters()``, ``.state_dict()``): a file of theirs shows nothing by those calls.
LOOKALIKE_FRAMEWORKS = frozenset({"paddle", "oneflow", "mindspore", "jittor", "megengine"})

# Libraries whose module base overrides ``__call__`` without running torch hooks
# (``gpytorch.Module.__call__`` calls ``self.forward`` itself): a ``.forward`` call on
# their classes skips nothing that calling would run.
HOOKLESS_LIBRARIES = frozenset({"gpytorch"})

# Packages whose classes and functions give no torch module whatever their names: the
# Lua-torch port of torch < 1.0 (``torch.legacy.nn.Module`` is a plain class) and
# ``load_lua``; compiled extensions; other frameworks; OpenCV DNN nets, ONNX Runtime and
# OpenVINO sessions, MuJoCo simulators (``sim.forward()``) and their environments, sklearn.
NOT_MODULE_PACKAGES = (
    *words("torch.legacy torch.utils.serialization torchfile torch.utils.cpp_extension"),
    *sorted(OTHER_FRAMEWORKS),
    *words("paddle cv2 onnxruntime openvino mujoco_py mujoco gym gymnasium dm_control sklearn"),
)
# Classes of libraries that mix torch modules and plain wrappers, told apart by name:
# skorch's estimators (``NeuralNetClassifier``) and optimum's exported or compiled models
# (``ORTModelForSequenceClassification``: an ``OptimizedModel``, not an ``nn.Module``).
_NOT_MODULE_CLASSES: dict[str, re.Pattern[str]] = {
    "skorch": re.compile(r"^NeuralNet"),
    "optimum": re.compile(r"^(?:Neuron|OV|ORT|INC|IPEX)\w*Model|^OptimizedModel$"),
}


def not_module_package(module: str) -> bool:
    """Whether ``module`` is (under) one of `NOT_MODULE_PACKAGES`."""
    return any(module == p or module.startswith(f"{p}.") for p in NOT_MODULE_PACKAGES)


def not_module_class(module: str, name: str) -> bool:
    """Whether ``name`` imported from ``module`` is known to give no torch module: anything
    of `NOT_MODULE_PACKAGES`, or a class `_NOT_MODULE_CLASSES` names."""
    if not_module_package(module):
        return True
    pattern = _NOT_MODULE_CLASSES.get(module.partition(".")[0])
    return pattern is not None and bool(pattern.match(name))


# Model libraries whose public model classes say so in their names (``BertModel``,
# ``T5ForConditionalGeneration``, ``PeftModel``, ``UNet2DConditionModel``,
# ``ComposerModel``); their TensorFlow/Flax twins (``TF*``, ``Flax*``) are not torch's.
MODEL_LIBRARIES = frozenset({"transformers", "peft", "diffusers", "composer"})
_LIBRARY_MODEL = re.compile(r"(?:Model|ModelWith[A-Z]\w*|For[A-Z]\w*)$")
# transformers' naming of auto classes that load a model (``AutoModelForCausalLM``), which
# projects follow for their own (``AutoDistributedModelForCausalLM.from_pretrained``).
_AUTO_MODEL = re.compile(r"^Auto\w*Model(?:For[A-Z]\w*|With[A-Z]\w*)?$")
AUTO_LOADERS = frozenset({"from_pretrained", "from_config"})

# Packages whose public lowercase functions build models: ``torchvision.models.resnet50()``,
# ``torchvision.models.detection.fasterrcnn_resnet50_fpn()``, ``get_model("vit_b_16")``.
MODEL_FUNCTION_PACKAGES = words(
    """
    torchvision.models torchvision.models.detection torchvision.models.segmentation
    torchvision.models.video torchvision.models.optical_flow torchvision.models.quantization
    torchaudio.models
    """
)
# Packages whose public classes are torch modules, so ``getattr(nn, name)(...)`` builds one.
MODULE_CLASS_PACKAGES = frozenset({"torch.nn", "torch.nn.modules"})
_NOT_MODEL_FUNCTIONS = ("get_model_weights", "get_weight", "list_models")
# Single functions of other libraries that build a model: mmdet's and mmseg's APIs,
# open_clip's and whisper's loaders, peft's wrapper.
MODEL_FUNCTIONS = frozenset(
    {"mmdet.apis.init_detector", "mmseg.apis.init_model", "mmseg.apis.init_segmentor"}
    | {"open_clip.create_model", "whisper.load_model", "peft.get_peft_model"}
    | {"segmentation_models_pytorch.create_model"}
    # higher's functional copies: a subclass of the patched module's own class
    | {"higher.monkeypatch", "higher.patch.monkeypatch", "higher.patch.make_functional"}
)


# Packages whose every public class is a torch module (torchmetrics is not here: its
# installed sources say which classes are modules, see `index.installed`).
MODULE_PACKAGES = words(
    """
    torchaudio.transforms torchaudio.models sentence_transformers.models
    # nflows: ``Transform``, ``Distribution``, ``Flow``, the MADE and the nets of ``nflows.nn``
    nflows.transforms nflows.distributions nflows.flows nflows.nn.nde nflows.nn.nets
    # TransformerLens' layers (``Attention``, ``MLP``, ``TransformerBlock``, ``Unembed``)
    transformer_lens.components
    # torchvision's layers (the box helpers there are functions), einops' layers, MONAI's
    # networks, mamba_ssm's blocks, segmentation_models_pytorch's losses and decoders
    torchvision.ops torchvision.transforms.v2 einops.layers.torch monai.networks.nets
    mamba_ssm.modules segmentation_models_pytorch.losses segmentation_models_pytorch.decoders
    # stable-baselines3's policies and feature extractors (its algorithms, ``PPO``, are
    # plain classes elsewhere), vit-pytorch's models, ultralytics' networks, DGL's layers
    stable_baselines3.common.policies stable_baselines3.common.torch_layers
    stable_baselines3.dqn.policies stable_baselines3.sac.policies stable_baselines3.td3.policies
    vit_pytorch ultralytics.nn dgl.nn.pytorch
    # vLLM's layers whose every public class is a ``CustomOp`` (an ``nn.Module``)
    vllm.model_executor.layers.rotary_embedding vllm.model_executor.layers.layernorm
    vllm.model_executor.layers.activation
    """
)
_NOT_MODULE_SUBPACKAGES = (".functional", ".utilities")
# Classes of those packages that are exceptions (``nflows.transforms.InverseNotAvailable``).
_NOT_MODULE_CLASS = re.compile(r"(?:Error|Exception|Warning|NotAvailable|OutsideDomain)$")


# tensordict's module classes say so in their names; the package has enums too.
_TENSORDICT_NN = re.compile(r"Module|Sequential")


# Module base classes of libraries, by the package they are imported from (a submodule
# of it too: ``mmengine.model.base_module``): OpenMMLab's ``BaseModule``/``BaseModel``
# (mmengine, and mmcv before 2.0) and layers that projects build on.
LIBRARY_MODULE_CLASSES = by_package(
    """
    mmengine.model: BaseModule BaseModel BaseDataPreprocessor ImgDataPreprocessor BaseTTAModel
        ModuleList ModuleDict Sequential BaseAveragedModel ExponentialMovingAverage
        MomentumAnnealingEMA StochasticWeightAverage MMDistributedDataParallel
        MMSeparateDistributedDataParallel MMFullyShardedDataParallel
    mmcv.runner: BaseModule ModuleList ModuleDict Sequential
    mmcv.cnn: ConvModule DepthwiseSeparableConvModule Scale ContextBlock NonLocal2d
    # diffusers' autoencoders and transformers whose names do not end in "Model"
    diffusers: AutoencoderKL AutoencoderTiny AsymmetricAutoencoderKL PriorTransformer
        AutoencoderKLTemporalDecoder ConsistencyDecoderVAE
    sentence_transformers: SentenceTransformer
    # CP-Flow's flows, the rwkv package's model (a ``ScriptModule`` under RWKV_JIT_ON),
    # the LPIPS perceptual metric
    cpflows: SequentialFlow DeepConvexFlow ActNorm
    rwkv.model: RWKV
    lpips: LPIPS
    # higher's patched modules (``_MonkeyPatchBase(abc.ABC, torch.nn.Module)``)
    higher.patch: _MonkeyPatchBase
    efficientnet_pytorch: EfficientNet
    # DeepSpeed's engines (``DeepSpeedEngine(Module)`` and its subclasses), pipeline model
    deepspeed: DeepSpeedEngine PipelineEngine DeepSpeedHybridEngine PipelineModule
    # AllenNLP's model base and layers (``allennlp.models.archival.Archive`` is a tuple),
    # NeMo's model and module bases, Pyro's module classes and nets
    allennlp.models: Model BasicClassifier SimpleTagger
    allennlp.modules: TimeDistributed FeedForward Highway Seq2SeqEncoder Seq2VecEncoder
        TextFieldEmbedder TokenEmbedder ConditionalRandomField Elmo
    nemo.core: ModelPT NeuralModule
    pyro.nn: PyroModule DenseNN AutoRegressiveNN ConditionalDenseNN ConditionalAutoRegressiveNN
    # segmentation_models_pytorch's models (its ``utils`` hold plain loops and meters)
    segmentation_models_pytorch: Unet UnetPlusPlus MAnet Linknet FPN PSPNet DeepLabV3
        DeepLabV3Plus PAN UPerNet Segformer DPT
    # torchvision's image transforms that are ``nn.Module``s (since 0.8; ``Compose``,
    # ``ToTensor``, ``Lambda``, ``RandomOrder``, ``RandomChoice`` are plain classes)
    torchvision.transforms: Normalize Resize CenterCrop Pad RandomApply RandomCrop
        RandomHorizontalFlip RandomVerticalFlip RandomPerspective FiveCrop RandomResizedCrop
        TenCrop LinearTransformation ColorJitter Grayscale RandomRotation RandomAffine
        RandomGrayscale RandomErasing GaussianBlur RandomInvert RandomPosterize RandomSolarize
        RandomAdjustSharpness RandomAutocontrast RandomEqualize ElasticTransform
        ConvertImageDtype AutoAugment RandAugment TrivialAugmentWide AugMix
    # detectron2's layers (``ShapeSpec`` and the autograd functions left out)
    detectron2.layers: ASPP FrozenBatchNorm2d NaiveSyncBatchNorm CycleBatchNormList LayerNorm
        CNNBlockBase DepthwiseSeparableConv2d DeformConv ModulatedDeformConv ROIAlign
        ROIAlignRotated Conv2d ConvTranspose2d BatchNorm2d Linear
    """
)

# Libraries whose module classes say so in their names, by the package they come from (a
# submodule of it too), each checked in the library's source: every public top-level
# class of ``fairseq/models`` and ``fairseq/modules`` so named is an ``nn.Module``.
_FAIRSEQ_MODULE = re.compile(
    r"^(?:BaseFairseqModel|Fairseq\w*|[A-Z]\w*(?:Model|Encoder|Decoder|Layer|Attention|Embedding"
    r"|Norm))(?:Base)?$"
)
_TIMM_MODULE = re.compile(
    r"^(?!Format$)[A-Z]\w*(?<!Cfg)(?<!Fn)(?<!Info)(?<!Hooks)(?<!Builder)(?<!Iterator)"
    r"(?<!Interpolator)(?<!Type)$"
)
NAMED_MODULE_CLASSES: dict[str, re.Pattern[str]] = {
    "fairseq.models": _FAIRSEQ_MODULE,
    "fairseq.modules": _FAIRSEQ_MODULE,
    # spconv's sparse layers (1.x or ``spconv.pytorch``), not its ``SparseConvTensor``
    "spconv": re.compile(
        r"^(?!.*Tensor)(?:Sparse\w*(?:Conv\w*|Sequential|Pool\w*|Module)|SubMConv\w*|ToDense)$"
    ),
    # timm: every public top-level class of ``timm/models`` and ``timm/layers`` but the
    # configs (``*Cfg``), autograd functions (``*Fn``), ``FeatureInfo``/``FeatureHooks``,
    # builders, iterators, interpolators, the ``Format`` enum and type aliases
    "timm.models": _TIMM_MODULE,
    "timm.layers": _TIMM_MODULE,
    # PyG: every public top-level class of ``torch_geometric/nn`` but fx transformers, the
    # hub mixin, LR schedulers, loaders, k-NN indexes, autograd functions, result tuples
    "torch_geometric.nn": re.compile(
        r"^(?!Child$)[A-Z]\w*(?<!Transformer)(?<!Mixin)(?<!LR)(?<!Info)(?<!Output)(?<!Index)"
        r"(?<!Loader)(?<!Function)$"
    ),
    # TransformerLens' hooked models and hook points (not ``HookedTransformerConfig``)
    "transformer_lens": re.compile(
        r"^(?:Hooked(?:Transformer|Encoder|EncoderDecoder|AudioEncoder|RootModule|SAE"
        r"|SAETransformer)|HookPoint)$"
    ),
}
# torchvision's model classes (``ResNet``), from its model packages or an architecture's
# module (``torchvision.models.resnet``); not the ``*_Weights`` enums, ``*Outputs`` tuples,
# the helpers of private modules or the fx tracers of ``feature_extraction``.
_TORCHVISION_NOT_MODELS = ("torchvision.models.feature_extraction", "torchvision.models._")


def _torchvision_model(module: str, name: str) -> bool:
    parts = module.split(".")
    return (
        module.startswith("torchvision.models")
        and (module in MODEL_FUNCTION_PACKAGES or len(parts) == 3)
        and not module.startswith(_TORCHVISION_NOT_MODELS)
        and name[:1].isupper()
        and not any(part in name for part in ("Weights", "Output"))
    )


# OpenMMLab model packages, and their subpackages that hold only modules (``from
# mmdet.models.backbones import ResNet``); ``mmdet.models`` itself re-exports
# non-module helpers (assigners, coders), so only these subpackages count.
OPENMMLAB_PACKAGES = names(
    "mmdet mmseg mmpretrain mmcls mmdet3d mmpose mmocr mmaction mmagic mmedit mmrotate mmyolo"
    " mmtrack mmselfsup"
)
OPENMMLAB_MODULE_SUBPACKAGES = names(
    """
    backbones necks dense_heads roi_heads detectors losses heads segmentors decode_heads
    classifiers recognizers data_preprocessors seg_heads pose_estimators voxel_encoders
    """
)


def _openmmlab_module(module: str, name: str) -> bool:
    parts = module.split(".")
    return (
        len(parts) >= 3
        and parts[0] in OPENMMLAB_PACKAGES
        and parts[1] == "models"
        and any(p in OPENMMLAB_MODULE_SUBPACKAGES for p in parts[2:4])  # textdet.detectors
        and name[:1].isupper()
    )


def library_model_class(module: str, name: str) -> bool:
    """Whether ``name`` imported from ``module`` is a module class of a known library."""
    for package, classes in LIBRARY_MODULE_CLASSES.items():
        if (module == package or module.startswith(f"{package}.")) and name in classes:
            return True
    if _openmmlab_module(module, name) or _torchvision_model(module, name):
        return True
    for package, pattern in NAMED_MODULE_CLASSES.items():
        if (
            (module == package or module.startswith(f"{package}."))
            and not module.rpartition(".")[2].startswith("_")  # ``timm.models._builder``
            and pattern.match(name)
        ):
            return True
    if module == "tensordict.nn" or module.startswith("tensordict.nn."):
        return bool(_TENSORDICT_NN.search(name))
    if any(module == p or module.startswith(f"{p}.") for p in MODULE_PACKAGES):
        return (
            name[:1].isupper()
            and not any(s in module for s in _NOT_MODULE_SUBPACKAGES)
            and not _NOT_MODULE_CLASS.search(name)
        )
    if module.partition(".")[0] not in MODEL_LIBRARIES or name.startswith(("TF", "Flax")):
        return False
    return bool(_LIBRARY_MODEL.search(name)) or _transformers_layer(module, name)


def _transformers_layer(module: str, name: str) -> bool:
    """A layer class of a transformers model file (``transformers.models.llama.
    modeling_llama.LlamaRMSNorm``): everything there but outputs and caches is a module."""
    last = module.rpartition(".")[2]
    return (
        module.startswith("transformers.")
        and last.startswith("modeling_")
        and not last.startswith(("modeling_tf_", "modeling_flax_"))
        and not last.endswith(("_utils", "_outputs"))
        and name[:1].isupper()
        and not any(part in name for part in ("Output", "Cache", "Config"))
    )


def library_model_function(qualified: str) -> bool:
    """Whether the function ``package.name`` builds a model (see `MODEL_FUNCTION_PACKAGES`)."""
    package, _, name = qualified.rpartition(".")
    return qualified in MODEL_FUNCTIONS or (
        package in MODEL_FUNCTION_PACKAGES
        and name[:1].islower()
        and name not in _NOT_MODEL_FUNCTIONS
    )


def auto_model_class(path: str) -> bool:
    """Whether ``path`` names an auto class whose loaders give a torch model."""
    return bool(_AUTO_MODEL.match(path.rpartition(".")[2]))


def keras_file(tree: ast.Module, imports_torch: bool) -> bool:
    """A file that imports TensorFlow, Keras, JAX/Flax or MXNet and never names torch: its
    classes are that framework's layers and models, whatever a project-wide look-up of a
    base's name says."""
    return _imports_one_of(tree, imports_torch, OTHER_FRAMEWORKS)


def other_framework_file(tree: ast.Module, imports_torch: bool) -> bool:
    """A file that imports another deep-learning framework (`keras_file`, or one whose
    layers have torch's method names: PaddlePaddle, OneFlow, MindSpore, Jittor,
    MegEngine) and never names torch: a receiver's ``.eval()`` or ``.parameters()`` there
    is that framework's."""
    return _imports_one_of(tree, imports_torch, OTHER_FRAMEWORKS | LOOKALIKE_FRAMEWORKS)


def _imports_one_of(tree: ast.Module, imports_torch: bool, frameworks: frozenset[str]) -> bool:
    if imports_torch:
        return False
    for node in tree.body:
        if isinstance(node, ast.Import):
            tops = [alias.name.partition(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            tops = [(node.module or "").partition(".")[0]]
        else:
            continue
        if any(top in frameworks for top in tops):
            return True
    return False
