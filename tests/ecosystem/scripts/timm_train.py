"""timm as its training script uses it: a model from timm.create_model, its CUDA PrefetchLoader, and
its --amp autocast (one RESULT line). Needs timm and torchvision (torch 2.14.1 on these machines)."""
import json
import torch
import timm
from timm.data.loader import PrefetchLoader

model = timm.create_model("resnet18", num_classes=4, pretrained=False).cuda()
data = torch.utils.data.TensorDataset(torch.randn(8, 3, 32, 32), torch.randint(0, 4, (8,)))
loader = PrefetchLoader(torch.utils.data.DataLoader(data, batch_size=4), mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5),
                        device=torch.device("cuda"))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
seen = []
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):   # what timm's --amp does
        out = model(x)
    loss = torch.nn.functional.cross_entropy(out.float(), y)
    loss.backward(); opt.step(); opt.zero_grad()
    seen.append([str(x.device), str(out.dtype)])
print("RESULT " + json.dumps({"batches": seen, "param": str(next(model.parameters()).device)}))
