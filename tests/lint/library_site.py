"""A site folder of small library sources (the names and bases their real packages have,
nothing else), for tests of classes that the lint reads from installed packages."""

from __future__ import annotations

from pathlib import Path


def _classes(modules: str = "", plain: str = "") -> str:
    """A module defining ``modules`` as ``nn.Module`` subclasses and ``plain`` as classes."""
    text = "from torch import nn\n"
    text += "".join(f"\n\nclass {name}(nn.Module):\n    pass\n" for name in modules.split())
    return text + "".join(f"\n\nclass {name}:\n    pass\n" for name in plain.split())


def _subclasses(base: str, names: str) -> str:
    """``from module import Base`` (``base`` is ``module.Base``) and subclasses of it."""
    module, _, cls = base.rpartition(".")
    return f"from {module} import {cls}\n" + "".join(
        f"\n\nclass {name}({cls}):\n    pass\n" for name in names.split()
    )


_LAZY = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
SOURCES = {
    "lpips/__init__.py": _classes("LPIPS"),
    "rwkv/model.py": "import torch\n\nMyModule = torch.jit.ScriptModule\n\n\n"
    "class RWKV(MyModule):\n    pass\n",
    "nflows/distributions/__init__.py": _classes("MADEMoG"),
    "nflows/nn/nde/made.py": _classes("MADE"),
    "nflows/transforms/__init__.py": "class InverseNotAvailable(Exception):\n    pass\n",
    "cpflows/flows.py": _classes("SequentialFlow"),
    "spconv/pytorch/__init__.py": _classes("SparseModule", "SparseConvTensor")
    + "\n\nclass SubMConv3d(SparseModule):\n    pass\n",
    "timm/models/vision_transformer.py": _classes("VisionTransformer"),
    "timm/models/byobnet.py": "class ByoModelCfg:\n    pass\n",
    "timm/layers/__init__.py": "from .mlp import Mlp\nfrom .format import Format\n",
    "timm/layers/mlp.py": _classes("Mlp"),
    "timm/layers/format.py": "from enum import Enum\n\n\nclass Format(str, Enum):\n    NCHW = 1\n",
    "torch_geometric/nn/__init__.py": _classes("GCNConv", "ToHeteroTransformer"),
    "torch_geometric/nn/pool/knn.py": "class KNNIndex:\n    pass\n",
    "fairseq/models/__init__.py": _classes("FairseqEncoderModel"),
    "fairseq/dataclass/__init__.py": "class FairseqDataclass:\n    pass\n",
    "transformer_lens/__init__.py": _classes("HookedTransformer", "HookedTransformerConfig"),
    "transformer_lens/components/__init__.py": _classes("Attention"),
    "torchvision/models/__init__.py": "from .resnet import *\n",
    "torchvision/models/resnet.py": _classes("ResNet", "GoogLeNetOutputs ResNet50_Weights")
    + "\n\ndef resnet50() -> ResNet:\n    return ResNet()\n"
    + "\n\ndef get_model_weights(name) -> type[ResNet50_Weights]:\n    return ResNet50_Weights\n",
    "torchvision/models/detection/__init__.py": _classes("FasterRCNN")
    + "\n\ndef fasterrcnn_resnet50_fpn() -> 'FasterRCNN':\n    return FasterRCNN()\n",
    "torchvision/models/detection/_utils.py": "class BoxCoder:\n    pass\n",
    "torchvision/transforms/__init__.py": _classes(
        "ColorJitter RandomHorizontalFlip Normalize", "ToTensor Compose"
    ),
    "torchvision/transforms/v2/__init__.py": _classes("RandomCrop"),
    "torchvision/ops/__init__.py": _classes("MultiScaleRoIAlign"),
    "torchaudio/transforms/__init__.py": _classes("Resample"),
    "einops/layers/torch.py": _classes("Rearrange"),
    "segmentation_models_pytorch/__init__.py": _classes("Unet"),
    "segmentation_models_pytorch/utils/train.py": "class TrainEpoch:\n    pass\n",
    "allennlp/models/__init__.py": "from allennlp.models.model import Model\n",
    "allennlp/models/model.py": _classes("Model"),
    "allennlp/models/archival.py": "class Archive(tuple):\n    pass\n",
    "stable_baselines3/common/torch_layers.py": _classes("BaseFeaturesExtractor"),
    "mmengine/model/__init__.py": _classes("BaseModule"),
    "mmdet/models/__init__.py": "class Widget:\n    pass\n",
    "mmdet/models/backbones/__init__.py": _classes("ResNet"),
    "mmdet/models/task_modules/__init__.py": "class DeltaCoder:\n    pass\n",
    "mmseg/models/segmentors/__init__.py": _classes("EncoderDecoder"),
    "mmocr/models/textdet/detectors/__init__.py": _classes("Wrapper"),
    "mmocr/models/textdet/postprocessors/__init__.py": "class DBPost:\n    pass\n",
    "diffusers/__init__.py": _classes("AutoencoderKL"),
    # transformers' lazy exports: star imports under ``if TYPE_CHECKING:``, two levels deep
    "transformers/__init__.py": _LAZY + "    from .models import *\n",
    "transformers/modeling_utils.py": _classes("PreTrainedModel"),
    "transformers/models/__init__.py": _LAZY
    + "".join(f"    from .{name} import *\n" for name in ("auto", "bert", "clip", "mistral")),
    "transformers/models/auto/__init__.py": "class AutoTokenizer:\n    pass\n",
    "transformers/models/bert/__init__.py": _LAZY + "    from .modeling_bert import *\n",
    "transformers/models/bert/modeling_bert.py": _subclasses(
        "transformers.modeling_utils.PreTrainedModel", "BertModel"
    ),
    "transformers/models/mistral/__init__.py": _subclasses(
        "transformers.modeling_utils.PreTrainedModel", "MistralForCausalLM"
    ),
    "transformers/models/clip/__init__.py": _subclasses(
        "transformers.modeling_utils.PreTrainedModel", "CLIPVisionModelWithProjection"
    )
    + "\n\nclass CLIPImageProcessor:\n    pass\n",
    "transformers/models/llama/modeling_llama.py": _classes("LlamaRMSNorm", "LlamaModelOutput"),
    "tensordict/nn/__init__.py": "from enum import Enum\n\nfrom torch import nn\n\n\n"
    "class TensorDictModuleBase(nn.Module):\n    pass\n\n\n"
    "class InteractionType(Enum):\n    MODE = 1\n",
    "deepspeed/runtime/engine.py": "from torch.nn.modules import Module\n\n\n"
    "class DeepSpeedEngine(Module):\n    pass\n",
    "deepspeed/runtime/pipe/engine.py": _subclasses(
        "deepspeed.runtime.engine.DeepSpeedEngine", "PipelineEngine"
    ),
    "vllm/__init__.py": "class SamplingParams:\n    pass\n",
    "vllm/model_executor/custom_op.py": _classes("CustomOp"),
    "vllm/model_executor/layers/layernorm.py": _subclasses(
        "vllm.model_executor.custom_op.CustomOp", "RMSNorm"
    ),
    "vllm/model_executor/layers/rotary_embedding.py": _subclasses(
        "vllm.model_executor.custom_op.CustomOp", "RotaryEmbedding"
    ),
    "vllm/model_executor/layers/linear.py": "class LinearMethodBase:\n    pass\n",
    "detectron2/layers/__init__.py": _classes("ROIAlign", "ShapeSpec"),
    "higher/__init__.py": "from higher import patch\n",
    "higher/patch.py": "import abc as _abc\n\nimport torch as _torch\n\n\n"
    "class _MonkeyPatchBase(_abc.ABC, _torch.nn.Module):\n    pass\n\n\n"
    "def monkeypatch(module) -> _MonkeyPatchBase:\n    return _MonkeyPatchBase()\n",
    "skorch/__init__.py": "class NeuralNet:\n    pass\n\n\n"
    "class NeuralNetClassifier(NeuralNet):\n    pass\n",
}


def write_site(site: Path) -> Path:
    """Writes `SOURCES` under ``site`` (an ``__init__.py`` in every package folder)."""
    for name, text in SOURCES.items():
        path = site / name
        for folder in path.relative_to(site).parents:
            init = site / folder / "__init__.py"
            if folder.parts and not init.exists():
                init.parent.mkdir(parents=True, exist_ok=True)
                init.write_text("", encoding="utf-8")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return site
