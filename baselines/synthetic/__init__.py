"""The synthetic experiments of Zimmermann et al. (ICML 2021, Tables 1 and 2) and Rusak et al.
(AISTATS 2025, the AnInfoNCE controlled experiment): an MLP encoder trained on latents pushed through
a random invertible MLP, with the package's losses, output spaces and metrics.

``rows.toml`` holds every row as data; ``run`` trains one row and seed; ``report`` tabulates results.
"""
