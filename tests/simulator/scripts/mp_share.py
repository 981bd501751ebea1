"""npu tensors sent to a spawned process (tests/simulator/test_ipc.py): the child writes through them and
the parent sees it. Prints ``RESULT key=value ...``."""
import torch
import torch.multiprocessing as mp


def child(model, view, queue):
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
        view[1:3].fill_(7.0)
    queue.put((str(model.weight.device), str(view.device), type(model.weight).__name__,
               model.weight.requires_grad, torch.npu.is_available()))


if __name__ == "__main__":
    from ascend_compat import simulator

    simulator.install()
    mp.set_start_method("spawn", force=True)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to("npu")
    model.share_memory()  # a no-op on npu tensors, as in torch
    before = [p.detach().cpu().clone() for p in model.parameters()]
    base = torch.zeros(6, device="npu")
    allocated = torch.npu.memory_allocated()
    queue = mp.SimpleQueue()
    proc = mp.Process(target=child, args=(model, base[1:5], queue))
    proc.start()
    weight_device, view_device, kind, requires_grad, available = queue.get()
    proc.join()
    plus_one = all(torch.equal(p.detach().cpu(), b + 1) for p, b in zip(model.parameters(), before))
    allocated_same = torch.npu.memory_allocated() == allocated
    model(torch.ones(3, 4, device="npu")).sum().backward()  # autograd still sees the moved storages
    try:
        from multiprocessing.reduction import ForkingPickler

        ForkingPickler.dumps(base.untyped_storage())
        storage_refused = "no"
    except RuntimeError as exc:
        storage_refused = str(exc).replace(" ", "_")
    print(f"RESULT exit={proc.exitcode} child_weight={weight_device} child_view={view_device} kind={kind} "
          f"requires_grad={requires_grad} plus_one={plus_one} base={base.cpu().tolist()} "
          f"allocated_same={allocated_same} grad={model.weight.grad.device} "
          f"storage={storage_refused}".replace(", ", ","))
