"""What each leaderboard column means, in one sentence: the legend under LEADERBOARD.md's header and the
tooltips and legend of the page's table (``leaderboard.site``). Keys are the columns' data keys."""

from __future__ import annotations

MEANINGS = {
    "rank": "rank within this track and protocol: by MCC, then linear R², then ID",
    "name": "the model (linked to its paper), its entry ID and notes",
    "positives": "how positive pairs were made",
    "loss": "the training loss",
    "model_space": "the space the encoder's features live in",
    "linear_r2": "linear R²: the share of each latent's variance a linear read-out of the features recovers "
                 "on held-out test images, averaged over the latents",
    "mcc_pearson": "MCC: each latent's |Pearson correlation| with the feature it is matched to (one feature "
                   "per latent), averaged",
    "nonlinear_r2": "kernel R²: as linear R², with a kernel ridge read-out (recovery up to a nonlinear map)",
    "dci_disentanglement": "D: DCI disentanglement (Eastwood & Williams, ICLR 2018), whether each feature "
                           "serves one latent; read it beside I",
    "dci_completeness": "C: DCI completeness, whether each latent lives in one feature; read it beside I",
    "dci_informativeness": "I: DCI informativeness, how much of each latent an elastic-net read-out of "
                           "all features recovers",
    "extrapolation_linear_r2": "extrapolation R²: the linear read-out fitted where a latent is at most 0.5 "
                               "and scored where it is above",
    **{f"ood_{name}_linear_r2": f"OOD {name} R²: the linear read-out of the test split scored on the OOD "
                                f"track's {name} region, never shown in training"
       for name in ("interpolation", "extrapolation", "composition")},
    **{f"{block}_{fit}_r2": f"{block} R² ({fit}): the mean {fit} R² of the {block} latents on content/style "
                            f"pairs ({'high' if block == 'content' else 'low'} is what a content encoder "
                            "should score)"
       for block in ("content", "style") for fit in ("linear", "kernel")},
    "status": "how the numbers were obtained (the status legend above)",
}


def markdown_legend(keys: list[str]) -> str:
    """The legend of a Markdown table's columns (``keys``: their data keys), one line."""
    return "Columns: " + "; ".join(MEANINGS[key] for key in keys) + "."
