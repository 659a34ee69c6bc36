"""Models of the vision libraries (torchvision, timm), built by their own constructors.

An :class:`~semmap_corpus.specs.Arch` whose ``source`` is not
``"transformers"`` names a constructor here (``model_type``) and its keyword
arguments (``config``). Each constructor is the library's public builder or
model class; where the library offers width or depth options they narrow the
model, so module names and structure are those of the trained family at a
fraction of its size. Weights are seeded (``torch.manual_seed(0)``) and
perturbed like every corpus model (:func:`semmap.manifest._models.perturb_parameters`).
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from semmap.manifest._models import perturb_parameters


def _torchvision() -> dict[str, Callable[..., torch.nn.Module]]:
    from torchvision import models
    from torchvision.models import convnext, efficientnet, regnet, swin_transformer

    def efficientnet_narrow(width_mult: float, depth_mult: float, **kw: Any) -> torch.nn.Module:
        # efficientnet_b0's own recipe at other multipliers (the b0..b7 builders fix them)
        setting, last_channel = efficientnet._efficientnet_conf(
            "efficientnet_b0", width_mult=width_mult, depth_mult=depth_mult
        )
        return efficientnet.EfficientNet(setting, 0.2, last_channel=last_channel, **kw)

    def convnext_narrow(channels: list[int], depths: list[int], **kw: Any) -> torch.nn.Module:
        stages = [
            convnext.CNBlockConfig(c, channels[i + 1] if i + 1 < len(channels) else None, d)
            for i, (c, d) in enumerate(zip(channels, depths))
        ]
        return convnext.ConvNeXt(stages, **kw)

    def regnet_narrow(depth: int, w_0: int, w_a: float, w_m: float, group_width: int, se_ratio: float,
                      stem_width: int, **kw: Any) -> torch.nn.Module:
        params = regnet.BlockParams.from_init_params(
            depth=depth, w_0=w_0, w_a=w_a, w_m=w_m, group_width=group_width, se_ratio=se_ratio
        )
        return regnet.RegNet(params, stem_width=stem_width, **kw)

    def swin_v2(**kw: Any) -> torch.nn.Module:
        return swin_transformer.SwinTransformer(
            block=swin_transformer.SwinTransformerBlockV2,
            downsample_layer=swin_transformer.PatchMergingV2,
            stochastic_depth_prob=0.0,
            **kw,
        )

    return {
        "resnet18": models.resnet18,
        "resnet34": models.resnet34,
        "mobilenet_v3_small": models.mobilenet_v3_small,
        "mobilenet_v2": models.mobilenet_v2,
        "efficientnet": efficientnet_narrow,
        "convnext": convnext_narrow,
        "regnet": regnet_narrow,
        "densenet": models.DenseNet,
        "googlenet": models.GoogLeNet,
        "vit": models.VisionTransformer,
        "swin": models.SwinTransformer,
        "swin_v2": swin_v2,
        "shufflenet_v2": models.ShuffleNetV2,
        "mnasnet": models.MNASNet,
        "squeezenet1_1": models.squeezenet1_1,
    }


def build(source: str, constructor: str, config: dict[str, Any], *, seed: int = 0,
          trained_like: bool = True) -> torch.nn.Module:
    """The model ``constructor(**config)`` of ``source`` in eval mode, seeded and (unless
    ``trained_like`` is false: the weights the constructor initialised) trained-like."""
    torch.manual_seed(seed)
    if source == "torchvision":
        builders = _torchvision()
        if constructor not in builders:
            raise KeyError(f"unknown torchvision constructor {constructor!r}; known: {', '.join(sorted(builders))}")
        model = builders[constructor](**config)
    elif source == "timm":
        import timm

        model = timm.create_model(constructor, pretrained=False, **config)
    else:
        raise ValueError(f"unknown model source {source!r}")
    if trained_like:
        perturb_parameters(model, seed)
    model.eval()
    return model


def example_inputs(image_size: int, *, batch: int = 2) -> tuple[torch.Tensor, ...]:
    """One seeded image batch, passed positionally (``forward(x)``)."""
    gen = torch.Generator().manual_seed(0)
    return (torch.randn(batch, 3, image_size, image_size, generator=gen),)


class TaskHead(torch.nn.Module):
    """A task head around a model, as users wrap a backbone: ``backbone`` then ``head``."""

    def __init__(self, backbone: torch.nn.Module, outputs: int, classes: int = 5) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = torch.nn.Linear(outputs, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))
