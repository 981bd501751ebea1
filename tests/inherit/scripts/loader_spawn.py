"""DataLoader workers started with spawn see the shim: torch.device("cuda") is the NPU there too."""
import torch
from torch.utils.data import DataLoader, Dataset


class Where(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        return f"{info.id}:{torch.device('cuda').type}:{torch.cuda.is_available()}"


if __name__ == "__main__":
    loader = DataLoader(Where(), batch_size=None, num_workers=2, multiprocessing_context="spawn")
    print("WORKERS", sorted(set(loader)), flush=True)
