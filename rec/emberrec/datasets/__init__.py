"""TorchRec's datasets: `criteo` (the Criteo 1TB and Kaggle TSV files, and their binary npy
form), `movielens` (MovieLens 20M / 25M CSV files), `random` (`RandomRecDataset`), and `utils`
(`Batch` and the DataPipes they are built from). Nothing is downloaded: the readers take local
paths to the files as the dataset's owners distribute them."""
import emberrec.datasets.criteo  # noqa: F401
import emberrec.datasets.movielens  # noqa: F401
import emberrec.datasets.random  # noqa: F401
import emberrec.datasets.utils  # noqa: F401
