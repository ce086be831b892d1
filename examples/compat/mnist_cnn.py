"""The MNIST convolutional net of PyTorch's examples (two convs, dropout, two linear layers,
Adadelta with StepLR), trained on synthetic 28x28 digits so it needs no download."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def synthetic_digits(n, generator):
    """Images whose label is the quadrant holding a bright blob (learnable in a few steps)."""
    images = torch.rand(n, 1, 28, 28, generator=generator) * 0.1
    labels = torch.randint(0, 4, (n,), generator=generator)
    for i, label in enumerate(labels.tolist()):
        row, col = divmod(label, 2)
        images[i, 0, row * 14:row * 14 + 10, col * 14:col * 14 + 10] += 1.0
    return TensorDataset((images - 0.1307) / 0.3081, labels)


def train(model, device, loader, optimizer, epoch, log_interval):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if batch_idx % log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}]\tLoss: {loss.item():.6f}")


def test(model, device, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            correct += output.argmax(dim=1, keepdim=True).eq(target.view_as(output.argmax(dim=1, keepdim=True))).sum().item()
    test_loss /= len(loader.dataset)
    print(f"Test set: Average loss: {test_loss:.4f}, Accuracy: {correct}/{len(loader.dataset)}")
    return correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser(description="PyTorch MNIST Example (synthetic data)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=4)
    parser.add_argument("--save-model", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cpu")
    generator = torch.Generator().manual_seed(args.seed)
    train_loader = DataLoader(synthetic_digits(256, generator), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(synthetic_digits(128, generator), batch_size=64)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(model, device, train_loader, optimizer, epoch, args.log_interval)
        accuracy = test(model, device, test_loader)
        scheduler.step()
    assert accuracy > 0.5, accuracy
    if args.save_model:
        torch.save(model.state_dict(), "mnist_cnn.pt")


if __name__ == "__main__":
    main()
