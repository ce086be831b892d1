"""TorchRec's datasets: `criteo` (the Criteo 1TB and Kaggle TSV files, and their binary npy
form), `movielens` (MovieLens 20M / 25M CSV files), `random` (`RandomRecDataset`), and `utils`
(`Batch` and the DataPipes they are built from). Nothing is downloaded: the readers take local
paths to the files as the dataset's owners distribute them."""
