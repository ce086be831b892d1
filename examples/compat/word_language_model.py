"""The word-level language model of PyTorch's examples, shrunk: an LSTM and a Transformer
encoder model (tied embeddings, batchify/get_batch, truncated BPTT with repackaged hidden
state, gradient clipping, the manual SGD update) on a synthetic corpus."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.2, tie_weights=True):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.decoder.out_features)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        shape = (self.nlayers, bsz, self.nhid)
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(shape), weight.new_zeros(shape))
        return weight.new_zeros(shape)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=500):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0), :])


class TransformerModel(nn.Module):
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.2):
        super().__init__()
        self.model_type = "Transformer"
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        layer = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.decoder = nn.Linear(ninp, ntoken)
        self.ninp = ninp

    @staticmethod
    def square_subsequent_mask(sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def forward(self, src):
        mask = self.square_subsequent_mask(len(src))
        src = self.pos_encoder(self.encoder(src) * math.sqrt(self.ninp))
        output = self.decoder(self.transformer_encoder(src, mask))
        return F.log_softmax(output, dim=-1)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def synthetic_corpus(ntokens, length):
    # A repeating phrase with noise: a model that learns it beats the uniform guess.
    phrase = torch.randint(0, ntokens, (17,))
    corpus = phrase.repeat(length // 17 + 1)[:length]
    noise = torch.rand(length) < 0.1
    return torch.where(noise, torch.randint(0, ntokens, (length,)), corpus)


def train_epoch(model, data, ntokens, args, lr):
    model.train()
    criterion = nn.NLLLoss()
    hidden = None if isinstance(model, TransformerModel) else model.init_hidden(args.batch_size)
    total = 0.0
    for batch, i in enumerate(range(0, data.size(0) - 1, args.bptt)):
        inputs, targets = get_batch(data, i, args.bptt)
        model.zero_grad()
        if hidden is None:
            output = model(inputs).view(-1, ntokens)
        else:
            hidden = repackage_hidden(hidden)
            output, hidden = model(inputs, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total += loss.item()
    return total / (batch + 1)


def main():
    parser = argparse.ArgumentParser(description="word language model (synthetic corpus)")
    parser.add_argument("--model", default="all", choices=["LSTM", "GRU", "Transformer", "all"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--bptt", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--clip", type=float, default=0.25)
    parser.add_argument("--lr", type=float, default=5.0)
    args = parser.parse_args()
    torch.manual_seed(1111)

    ntokens = 50
    data = batchify(synthetic_corpus(ntokens, 2000), args.batch_size)
    kinds = ["LSTM", "Transformer"] if args.model == "all" else [args.model]
    for kind in kinds:
        if kind == "Transformer":
            model = TransformerModel(ntokens, 32, 2, 64, 2)
        else:
            model = RNNModel(kind, ntokens, 32, 32, 2)
        losses = [train_epoch(model, data, ntokens, args, args.lr) for _ in range(args.epochs)]
        print(f"{kind}: loss per epoch {[round(l, 3) for l in losses]}, ppl {math.exp(losses[-1]):.1f}")
        assert losses[-1] < math.log(ntokens), losses


if __name__ == "__main__":
    main()
