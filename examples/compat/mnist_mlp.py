"""A multilayer perceptron on flattened 28x28 digits, in the style of the beginner tutorials:
`nn.Sequential`, Adam, cross entropy, accuracy per epoch; synthetic data, no download."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_data(n, generator):
    # Ten fixed prototype images; each sample is a noisy copy of its label's prototype.
    prototypes = torch.rand(10, 28 * 28, generator=torch.Generator().manual_seed(0))
    labels = torch.randint(0, 10, (n,), generator=generator)
    images = prototypes[labels] + 0.3 * torch.randn(n, 28 * 28, generator=generator)
    return TensorDataset(images.view(n, 1, 28, 28), labels)


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 128), nn.ReLU(),
            nn.Linear(128, 64), nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))


def train_loop(dataloader, model, loss_fn, optimizer):
    model.train()
    for X, y in dataloader:
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def test_loop(dataloader, model, loss_fn):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    accuracy = correct / len(dataloader.dataset)
    print(f"Accuracy: {100 * accuracy:>0.1f}%, Avg loss: {test_loss / len(dataloader):>8f}")
    return accuracy


torch.manual_seed(0)
generator = torch.Generator().manual_seed(1)
train_dataloader = DataLoader(make_data(1024, generator), batch_size=64, shuffle=True)
test_dataloader = DataLoader(make_data(256, generator), batch_size=64)
model = NeuralNetwork()
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for t in range(3):
    print(f"Epoch {t + 1}")
    train_loop(train_dataloader, model, loss_fn, optimizer)
    accuracy = test_loop(test_dataloader, model, loss_fn)
assert accuracy > 0.9, accuracy
