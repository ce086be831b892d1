"""functorch's per-sample-gradient and model-ensembling recipes: `functorch.vmap` over
`functorch.grad` of a loss written with `torch.func.functional_call`, checked against a loop
of ordinary backward passes."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from functorch import grad, vmap
from torch.func import functional_call, stack_module_state


torch.manual_seed(0)


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 13 * 13, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        return F.log_softmax(self.fc1(torch.flatten(x, 1)), dim=1)


model = SimpleCNN()
data = torch.randn(16, 1, 28, 28)
targets = torch.randint(10, (16,))
params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
    return F.nll_loss(predictions, target.unsqueeze(0))


per_sample_grads = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)
for i in range(len(data)):
    model.zero_grad()
    F.nll_loss(model(data[i:i + 1]), targets[i:i + 1]).backward()
    for name, p in model.named_parameters():
        assert torch.allclose(per_sample_grads[name][i], p.grad, atol=1e-5), name
print({k: tuple(v.shape) for k, v in per_sample_grads.items()})

# Ensembling: five MLPs evaluated in one vmapped call.
models = [nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)) for _ in range(5)]
ensemble_params, ensemble_buffers = stack_module_state(models)
x = torch.randn(3, 4)
out = vmap(lambda p, b: functional_call(models[0], (p, b), (x,)))(ensemble_params, ensemble_buffers)
assert out.shape == (5, 3, 2)
assert torch.allclose(out[2], models[2](x), atol=1e-6)
print("ensemble output", tuple(out.shape))
