"""Where each library entry point that picks a device puts the work, under the shim (one RESULT line).

Run as ``ascend-compat run --simulate entry_points.py OUT_DIR``; every probe is isolated, so one
failure is reported as ``error: ...`` and the others still run.
"""
import json
import os
import sys
import warnings

import torch

warnings.simplefilter("ignore")
OUT = sys.argv[1]
results = {}


def probe(name):
    def wrap(fn):
        try:
            results[name] = str(fn())
        except Exception as exc:  # reported, not hidden: the test asserts on every entry
            results[name] = f"error: {type(exc).__name__}: {exc}"[:300]
        return fn
    return wrap


def tiny_bert():
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, num_labels=2)
    return BertForSequenceClassification(config)


def tiny_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, **{w: i + 4 for i, w in enumerate("a b c d".split())}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]")


# ---- Lightning
@probe("lightning.Trainer(accelerator='auto')")
def _():
    import lightning as L
    return L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False,
                     enable_checkpointing=False).strategy.root_device


@probe("lightning.Trainer(accelerator='gpu')")
def _():
    import lightning as L
    return L.Trainer(accelerator="gpu", devices=1, logger=False, enable_progress_bar=False,
                     enable_model_summary=False, enable_checkpointing=False).strategy.root_device


@probe("lightning.Trainer(accelerator='cuda')")
def _():
    import lightning as L
    return L.Trainer(accelerator="cuda", devices=1, logger=False, enable_progress_bar=False,
                     enable_model_summary=False, enable_checkpointing=False).strategy.root_device


@probe("lightning.Fabric()")
def _():
    import lightning as L
    return L.Fabric().device


@probe("lightning.Fabric(accelerator='cuda')")
def _():
    import lightning as L
    return L.Fabric(accelerator="cuda", devices=1).device


@probe("lightning.pytorch.cli.LightningCLI(trainer accelerator auto)")
def _():
    import lightning as L
    from lightning.pytorch.cli import LightningCLI

    class M(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 2)

    cli = LightningCLI(M, run=False, args=["--trainer.logger=false", "--trainer.enable_progress_bar=false"])
    return cli.trainer.strategy.root_device


# ---- accelerate
@probe("accelerate.Accelerator()")
def _():
    from accelerate import Accelerator
    return Accelerator().device


@probe("accelerate.PartialState()")
def _():
    from accelerate import PartialState
    return PartialState().device


@probe("accelerate.utils.infer_auto_device_map")
def _():
    from accelerate.utils import infer_auto_device_map
    return sorted({str(v) for v in infer_auto_device_map(tiny_bert()).values()})


@probe("accelerate.notebook_launcher(num_processes=1)")
def _():
    from accelerate import notebook_launcher
    seen = []
    notebook_launcher(lambda: seen.append(str(torch.ones(1).cuda().device)), num_processes=1)
    return seen[0]


# ---- transformers
@probe("transformers.TrainingArguments().device")
def _():
    from transformers import TrainingArguments
    return TrainingArguments(output_dir=os.path.join(OUT, "args"), report_to=[]).device


@probe("transformers.Trainer(model) places the model")
def _():
    from transformers import Trainer, TrainingArguments
    trainer = Trainer(model=tiny_bert(), args=TrainingArguments(output_dir=os.path.join(OUT, "trainer"), report_to=[]))
    return next(trainer.model.parameters()).device


@probe("transformers.pipeline(device=0)")
def _():
    from transformers import pipeline
    return pipeline("text-classification", model=tiny_bert(), tokenizer=tiny_tokenizer(), device=0).device


@probe("transformers.pipeline(device='cuda')")
def _():
    from transformers import pipeline
    pipe = pipeline("text-classification", model=tiny_bert(), tokenizer=tiny_tokenizer(), device="cuda")
    pipe("a b c")
    return pipe.device


@probe("transformers.from_pretrained(device_map='auto')")
def _():
    from transformers import BertForSequenceClassification
    path = os.path.join(OUT, "bert")
    tiny_bert().save_pretrained(path)
    model = BertForSequenceClassification.from_pretrained(path, device_map="auto")
    return sorted({str(p.device) for p in model.parameters()})


# ---- DeepSpeed
@probe("deepspeed.accelerator.get_accelerator()")
def _():
    from deepspeed.accelerator import get_accelerator
    acc = get_accelerator()
    return f"{acc.device_name()} {acc.current_device_name()}"


# ---- diffusers and peft
def tiny_ddpm():
    from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel

    unet = UNet2DModel(sample_size=8, in_channels=3, out_channels=3, layers_per_block=1,
                       block_out_channels=(8, 16), down_block_types=("DownBlock2D", "DownBlock2D"),
                       up_block_types=("UpBlock2D", "UpBlock2D"), norm_num_groups=4)
    return DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=2))


@probe("diffusers.DiffusionPipeline.to('cuda')")
def _():
    pipe = tiny_ddpm().to("cuda")
    pipe(num_inference_steps=2, output_type="np")
    return pipe.device


@probe("diffusers.DiffusionPipeline.enable_model_cpu_offload()")
def _():
    pipe = tiny_ddpm()
    pipe.enable_model_cpu_offload()
    pipe(num_inference_steps=2, output_type="np")
    return pipe._execution_device


@probe("peft.get_peft_model(...).to('cuda')")
def _():
    from peft import LoraConfig, get_peft_model
    model = get_peft_model(tiny_bert(), LoraConfig(r=2, target_modules=["query", "value"])).to("cuda")
    return sorted({str(p.device) for p in model.parameters()})


@probe("trl.SFTTrainer(...).train() (1 step)")
def _():
    from datasets import Dataset
    from transformers import GPT2Config, GPT2LMHeadModel
    from trl import SFTConfig, SFTTrainer

    tok = tiny_tokenizer()
    tok.eos_token = "[SEP]"
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=16, n_layer=1, n_head=2, n_positions=32))
    data = Dataset.from_dict({"text": ["a b c d", "b c a", "d d a b"] * 2})
    args = SFTConfig(output_dir=os.path.join(OUT, "sft"), max_steps=1, per_device_train_batch_size=2,
                     report_to=[], save_strategy="no", logging_strategy="no", max_length=16)
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tok)
    trainer.train()
    return next(trainer.model.parameters()).device


os.write(1, ("RESULT " + json.dumps(results) + "\n").encode())
