"""Optimizers and learning-rate schedulers as training scripts use them: a regression trained
with several optimizer/scheduler pairs (per-step and per-epoch schedules, ReduceLROnPlateau,
warm-up chained into cosine decay), and a checkpoint of model, optimizer and scheduler state
that resumes to the same trajectory."""
import io

import torch
import torch.nn as nn
from torch.optim import lr_scheduler

torch.manual_seed(0)
X = torch.randn(256, 10)
y = X @ torch.randn(10, 1) + 0.1 * torch.randn(256, 1)


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))


def epoch(model, optimizer, scheduler=None, per_step=False):
    loss_fn = nn.MSELoss()
    for i in range(0, len(X), 32):
        optimizer.zero_grad()
        loss = loss_fn(model(X[i:i + 32]), y[i:i + 32])
        loss.backward()
        optimizer.step()
        if per_step:
            scheduler.step()
    with torch.no_grad():
        return loss_fn(model(X), y).item()


def sgd_one_cycle(params):
    sgd = torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True)
    return sgd, lr_scheduler.OneCycleLR(sgd, max_lr=0.1, total_steps=EPOCHS * 8), True


def adamw_cosine(params):
    adamw = torch.optim.AdamW(params, lr=1e-2, weight_decay=1e-2)
    return adamw, lr_scheduler.CosineAnnealingLR(adamw, T_max=EPOCHS), False


def adam_warmup_decay(params):
    adam = torch.optim.Adam(params, lr=1e-2)
    warmup = lr_scheduler.LinearLR(adam, start_factor=0.1, total_iters=3)
    decay = lr_scheduler.ExponentialLR(adam, gamma=0.9)
    return adam, lr_scheduler.SequentialLR(adam, [warmup, decay], milestones=[3]), False


def rmsprop_plateau(params):
    rms = torch.optim.RMSprop(params, lr=1e-2)
    return rms, lr_scheduler.ReduceLROnPlateau(rms, factor=0.5, patience=1), False


EPOCHS = 20
SETUPS = {
    "SGD + OneCycleLR (per step)": sgd_one_cycle,
    "AdamW + CosineAnnealingLR": adamw_cosine,
    "Adam + SequentialLR(warm-up, decay)": adam_warmup_decay,
    "RMSprop + ReduceLROnPlateau": rmsprop_plateau,
}
for label, setup in SETUPS.items():
    model = make_model()
    optimizer, scheduler, per_step = setup(model.parameters())
    for _ in range(EPOCHS):
        loss = epoch(model, optimizer, scheduler, per_step)
        if isinstance(scheduler, lr_scheduler.ReduceLROnPlateau):
            scheduler.step(loss)
        elif not per_step:
            scheduler.step()
    print(f"{label:40s} final loss {loss:.4f}  lr {optimizer.param_groups[0]['lr']:.2e}")
    assert loss < 0.1, (label, loss)

# Checkpoint mid-training and resume: the resumed run follows the uninterrupted one.
model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
scheduler = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
for _ in range(3):
    epoch(model, optimizer)
    scheduler.step()
buffer = io.BytesIO()
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, buffer)
reference = [epoch(model, optimizer) for _ in range(2)]

buffer.seek(0)
checkpoint = torch.load(buffer)
resumed = make_model()
resumed.load_state_dict(checkpoint["model"])
optimizer = torch.optim.Adam(resumed.parameters(), lr=1e-2)
optimizer.load_state_dict(checkpoint["optimizer"])
scheduler = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
scheduler.load_state_dict(checkpoint["scheduler"])
assert optimizer.param_groups[0]["lr"] == 1e-2 * 0.5
again = [epoch(resumed, optimizer) for _ in range(2)]
print("resumed losses", again)
assert again == reference, (again, reference)
