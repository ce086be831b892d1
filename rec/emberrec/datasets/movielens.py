"""TorchRec's MovieLens readers: the ratings of MovieLens 20M and 25M (`ratings.csv` in `root`,
as GroupLens distributes them, https://grouplens.org/datasets/movielens/), row by row, with
the movie's title and genres from `movies.csv` when `include_movies_data=True`. The default row
mapper gives {"userId": int, "movieId": int, "rating": float, "timestamp": int[, "title": str,
"genres": str]}."""
import os

from emberrec.datasets.utils import LoadFiles, ReadLinesFromCSV, safe_cast

__all__ = ["RATINGS_FILENAME", "MOVIES_FILENAME", "DEFAULT_RATINGS_COLUMN_NAMES", "DEFAULT_MOVIES_COLUMN_NAMES",
           "DEFAULT_COLUMN_NAMES", "movielens_20m", "movielens_25m"]

RATINGS_FILENAME = "ratings.csv"
MOVIES_FILENAME = "movies.csv"
DEFAULT_RATINGS_COLUMN_NAMES = ["userId", "movieId", "rating", "timestamp"]
DEFAULT_MOVIES_COLUMN_NAMES = ["movieId", "title", "genres"]
DEFAULT_COLUMN_NAMES = DEFAULT_RATINGS_COLUMN_NAMES + DEFAULT_MOVIES_COLUMN_NAMES[1:]
COLUMN_TYPE_CASTERS = [
    lambda val: safe_cast(val, int, 0),
    lambda val: safe_cast(val, int, 0),
    lambda val: safe_cast(val, float, 0.0),
    lambda val: safe_cast(val, int, 0),
    str,
    str,
]


def _default_row_mapper(example):
    return {DEFAULT_COLUMN_NAMES[i]: COLUMN_TYPE_CASTERS[i](field) for i, field in enumerate(example)}


def _csv_rows(path, **open_kw):
    return ReadLinesFromCSV(LoadFiles((path,), mode="r", **open_kw), skip_first_line=True, delimiter=",")


def _join_with_movies(datapipe, root):
    movies = {row[0]: row[1:] for row in _csv_rows(os.path.join(root, MOVIES_FILENAME), newline="")}

    def join_rating_movie(rating):
        if rating[1] not in movies:
            raise ValueError(f"movieId {rating[1]} of {RATINGS_FILENAME} is not in {MOVIES_FILENAME}")
        return rating + movies[rating[1]]

    return datapipe.map(join_rating_movie)


def _movielens(root, *, include_movies_data=False, row_mapper=_default_row_mapper, **open_kw):
    ratings = os.path.join(root, RATINGS_FILENAME)
    if not os.path.isfile(ratings):
        raise FileNotFoundError(f"no {RATINGS_FILENAME} in {root} (download and unzip the dataset there)")
    datapipe = _csv_rows(ratings, **open_kw)
    if include_movies_data:
        datapipe = _join_with_movies(datapipe, root)
    if row_mapper:
        datapipe = datapipe.map(row_mapper)
    return datapipe


def movielens_20m(root, *, include_movies_data=False, row_mapper=_default_row_mapper, **open_kw):
    """MovieLens 20M from the unzipped folder `root` (ml-20m); `open_kw` goes to `open`."""
    return _movielens(root, include_movies_data=include_movies_data, row_mapper=row_mapper, **open_kw)


def movielens_25m(root, *, include_movies_data=False, row_mapper=_default_row_mapper, **open_kw):
    """MovieLens 25M from the unzipped folder `root` (ml-25m); `open_kw` goes to `open`."""
    return _movielens(root, include_movies_data=include_movies_data, row_mapper=row_mapper, **open_kw)
