"""The tables of the TorchRec parity case of test_quant_modules.py, shared with the reference
script (which imports no emberrec): (name, dim, rows, features, pooling), with dims FBGEMM's
row quantizers accept (whole bytes of packed values)."""
PARITY_TABLES = [("t1", 8, 10, ["f1", "f2"], "SUM"), ("t2", 16, 7, ["f3"], "MEAN"), ("t3", 8, 4, ["f1"], "SUM")]
