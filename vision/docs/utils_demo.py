"""Makes utils_demo.png, the picture in vision/README.md, with embervision.utils only:

    python vision/docs/utils_demo.py
"""
import math
import os

import ember
from embervision.utils import draw_bounding_boxes, draw_keypoints, draw_segmentation_masks, make_grid, save_image


def scene(h=120, w=160):
    """A synthetic picture: a sky-to-ground gradient, a sun and a house."""
    y = ember.arange(h, dtype=ember.float32).view(h, 1).expand(h, w) / h
    x = ember.arange(w, dtype=ember.float32).view(1, w).expand(h, w) / w
    img = ember.stack([0.3 + 0.4 * y, 0.5 + 0.3 * y, 0.9 - 0.6 * y])
    sun = ((x - 0.8) ** 2 + ((y - 0.2) * h / w) ** 2) < 0.006
    house = (x > 0.2) & (x < 0.5) & (y > 0.5) & (y < 0.9)
    roof = (y > 0.3) & (y <= 0.5) & ((x - 0.35).abs() < (y - 0.3) * 0.75)
    img = ember.where(sun[None], ember.tensor([1.0, 0.85, 0.2]).view(3, 1, 1), img)
    img = ember.where(house[None], ember.tensor([0.7, 0.4, 0.3]).view(3, 1, 1), img)
    img = ember.where(roof[None], ember.tensor([0.5, 0.1, 0.1]).view(3, 1, 1), img)
    return (img * 255).to(ember.uint8), sun, house | roof


def main():
    img, sun, house = scene()
    boxes = ember.tensor([[30.0, 34.0, 82.0, 110.0], [114.0, 8.0, 144.0, 40.0]])
    a = draw_bounding_boxes(img, boxes, labels=["house", "sun"], colors=["red", "yellow"], width=2)
    b = draw_segmentation_masks(img, ember.stack([house, sun]), alpha=0.6, colors=["blue", "orange"])
    t = [i / 5 * 2 * math.pi for i in range(5)]
    star = ember.tensor([[[129 + 14 * math.sin(a), 24 - 14 * math.cos(a)] for a in t]])
    c = draw_keypoints(img, star, connectivity=[(0, 2), (2, 4), (4, 1), (1, 3), (3, 0)], colors="white", radius=2, width=1)
    grid = make_grid([img, a, b, c], nrow=2, padding=4, pad_value=255)
    save_image(grid.to(ember.float32) / 255, os.path.join(os.path.dirname(__file__), "utils_demo.png"))


if __name__ == "__main__":
    main()
