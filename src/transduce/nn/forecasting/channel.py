"""The ``channel`` forecaster: each channel's window one token, embedded by a mixture of
linear experts, and a Transformer encoder across the channel tokens, optionally under
DUET's learned channel mask (Qiu et al. 2025).

Legend: B batch, L input length, H horizon, C channels, D d_model, E experts, F frequencies,
Q quantile levels.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transduce.nn.dropout import Dropout
from transduce.nn.forecasting.linear import moving_average
from transduce.nn.forecasting.norms import finish, instance_norm
from transduce.nn.forecasting.patch import PATCH_RESIDUALS
from transduce.nn.forecasting.quantiles import ordered
from transduce.nn.layers import EncoderLayer
from transduce.nn.transformer import Encoder

EXPERT_INITS = ("uniform", "mean")


class ChannelForecaster(nn.Module):
    """A Transformer encoder across channels, each channel's whole window one token (as in
    iTransformer, Liu et al. 2024), embedded by a mixture of linear experts (DUET's temporal
    clustering, Qiu et al. 2025).

    Inside reversible instance normalisation, each channel's window (L steps) is split into
    its moving average over ``trend_kernel`` steps and the rest (not split if 0); each of E
    experts maps both parts linearly to D features (DLinear's map, to a token instead of the
    horizon), and a softmax gate, itself a linear map of the window, mixes the experts'
    tokens, so windows of different shapes can lean on different experts. The C tokens
    attend to each other through the encoder, and a linear head maps each to its channel's
    horizon. The first ``targets`` channels are forecast; the rest (past-observed
    covariates) are only read. With ``mix_channels=False`` each token attends only to
    itself, so every channel is forecast from its own window alone (channel independence, as
    PatchTST), and the encoder is a per-channel network on the experts' features. With
    ``learned_mask=True`` each window's :class:`ChannelMask` chooses which channels each
    token attends to (DUET's channel clustering). The experts' maps start random
    (``expert_init="uniform"``, ±1/√L) or as the window's mean in every feature (``"mean"``:
    1/L everywhere, as DLinear's and DUET's code start them). With ``top_k`` k > 0 the gate
    is DUET's router instead: see :class:`TopKRouter`.
    """

    def __init__(
        self,
        *,
        channels: int,
        input_length: int,
        horizon: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        num_layers: int,
        dropout: float,
        experts: int = 4,
        trend_kernel: int = 25,
        head_dropout: float = 0.0,
        norm: str = "post",
        revin: bool = True,
        activation: str = "relu",
        quantiles: tuple[float, ...] = (),
        targets: int | None = None,
        revin_center: str = "mean",
        revin_affine: bool = True,
        mix_channels: bool = True,
        learned_mask: bool = False,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
        expert_init: str = "uniform",
        top_k: int = 0,
    ) -> None:
        # size: 27 of its lines are the signature, one per setting of the model
        super().__init__()
        if learned_mask and not mix_channels:
            raise ValueError("learned_mask needs mix_channels=True")
        if expert_init not in EXPERT_INITS:
            raise ValueError(f"expert_init must be one of {EXPERT_INITS}")
        if not 0 <= top_k <= experts:
            raise ValueError(f"top_k must be in [0, experts={experts}]")
        self.outputs, self.targets = 1 + len(quantiles), targets or channels
        self.horizon, self.trend_kernel = horizon, trend_kernel
        self.mix_channels = mix_channels
        self.channel_mask = ChannelMask(input_length) if learned_mask else None
        self.revin = instance_norm(channels, revin, revin_center, revin_affine)
        scale = input_length**-0.5
        # (E, L, D): each expert's map of the window (without its trend, if split) and of
        # its trend
        self.seasonal = nn.Parameter(
            torch.empty(experts, input_length, d_model).uniform_(-scale, scale)
        )
        self.trend = (
            nn.Parameter(torch.empty(experts, input_length, d_model).uniform_(-scale, scale))
            if trend_kernel
            else None
        )
        if expert_init == "mean":
            with torch.no_grad():
                for maps in (self.seasonal, self.trend):
                    if maps is not None:
                        maps.fill_(1 / input_length)
        self.bias = nn.Parameter(torch.zeros(experts, d_model))
        self.gate = (
            TopKRouter(input_length=input_length, experts=experts, k=top_k)
            if top_k
            else nn.Linear(input_length, experts)
        )
        layers = [
            EncoderLayer(
                d_model=d_model,
                num_heads=num_heads,
                d_ff=d_ff,
                dropout=dropout,
                attention_dropout=attention_dropout,
                activation_dropout=activation_dropout,
                residual=PATCH_RESIDUALS[norm],
                activation=activation,
            )
            for _ in range(num_layers)
        ]
        self.encoder = Encoder(layers, nn.LayerNorm(d_model) if norm != "batch" else None)
        self.head = nn.Sequential(Dropout(head_dropout), nn.Linear(d_model, horizon * self.outputs))

    def tokens(self, x: Tensor, raw: Tensor | None = None) -> Tensor:
        """x (B, L, C), normalised → (B, C, D): each channel's mixture of experts (a top-k
        router reads the window before normalisation, ``raw``, as DUET's does)."""
        series = x.transpose(1, 2)  # (B, C, L)
        if self.trend is None:
            per_expert = torch.einsum("bcl,eld->bced", series, self.seasonal)  # (B, C, E, D)
        else:
            trend = moving_average(x, self.trend_kernel).transpose(1, 2)  # (B, C, L)
            per_expert = torch.einsum(
                "bcl,eld->bced", series - trend, self.seasonal
            ) + torch.einsum("bcl,eld->bced", trend, self.trend)
        per_expert = per_expert + self.bias
        if isinstance(self.gate, TopKRouter):
            weights = self.gate((x if raw is None else raw).transpose(1, 2))  # (B, C, E)
        else:
            weights = self.gate(series).softmax(-1)  # (B, C, E)
        return (weights.unsqueeze(-1) * per_expert).sum(2)  # (B, C, D)

    def auxiliary_loss(self) -> Tensor | None:
        """What training adds to the forecast's error, as a mean to be weighed like it: the
        router's balance loss of the last forward in training mode (None without a router,
        or in eval mode)."""
        return getattr(self.gate, "balance_loss", None)

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        B, raw = x.shape[0], x
        stats = None
        if self.revin is not None:
            x, stats = self.revin.normalise(x)
        mask = None  # every channel's token attends to every other one's
        if not self.mix_channels:  # each only to its own: the channels stay independent
            mask = torch.eye(x.shape[2], dtype=torch.bool, device=x.device).unsqueeze(0)
        elif self.channel_mask is not None:
            mask = self.channel_mask(x)  # (B, C, C), sampled per window
        h, weights = self.encoder(self.tokens(x, raw), mask, need_weights)  # (B, C, D)
        y = self.head(h[:, : self.targets])  # (B, C', H · (1 + Q))
        y = y.view(B, self.targets, self.horizon, self.outputs).transpose(1, 2)
        # the last layer's attention between the channel tokens, (B, heads, C, C), if asked
        return finish(ordered(y), self.revin, stats), weights[-1] if need_weights else None


class TopKRouter(nn.Module):
    """DUET's distribution router (after Shazeer et al. 2017's noisy top-k gate): a
    two-layer map of the window (L → 256 → E, no biases) scores the experts; in training a
    second such map sets the standard deviation (softplus + 0.01) of Gaussian noise added to
    the scores. Each window goes to its k best-scored experts, weighted by the softmax of
    their scores (0 for the others). In training it also keeps ``balance_loss``, the squared
    coefficient of variation of the experts' summed weights and of their expected loads
    (the probability, under the noise, that each expert is among a window's k), which the
    task adds to the loss so that no expert is left unused; ``None`` in evaluation.

    One departure from DUET's code, for a stated reason: the loads compare each expert's
    score with the k-th and (k+1)-th noisy scores themselves, as Shazeer et al. define
    them; DUET's code compares scores with softmax probabilities.
    """

    def __init__(self, *, input_length: int, experts: int, k: int, hidden: int = 256) -> None:
        super().__init__()
        self.k = k

        def scores() -> nn.Module:
            return nn.Sequential(
                nn.Linear(input_length, hidden, bias=False),
                nn.ReLU(),
                nn.Linear(hidden, experts, bias=False),
            )

        self.score = scores()
        # with k = E every expert is chosen: no noise, so no parameters left unused
        self.noise = scores() if k < experts else None
        self.balance_loss: Tensor | None = None

    def forward(self, series: Tensor) -> Tensor:
        """series (B, C, L) → weights (B, C, E), k of them non-zero per window, summing to 1."""
        clean = self.score(series)  # (B, C, E)
        experts = clean.shape[-1]
        noisy = self.training and self.noise is not None
        if noisy:
            std = nn.functional.softplus(self.noise(series)) + 0.01
            scores = clean + torch.randn_like(clean) * std
        else:
            scores = clean
        top, index = scores.topk(min(self.k + 1, experts), dim=-1)  # (B, C, k + 1)
        weights = torch.zeros_like(scores).scatter(
            -1, index[..., : self.k], top[..., : self.k].softmax(-1)
        )
        if not self.training:
            self.balance_loss = None
            return weights
        rows = weights.flatten(0, -2)  # (B·C, E)
        if noisy:  # P(expert e is among the k | the other scores), Shazeer et al.'s load
            kth, next_ = top[..., self.k - 1 : self.k], top[..., self.k : self.k + 1]
            inside = scores > next_  # e is in the top k: it must stay above the (k+1)-th
            threshold = torch.where(inside, next_, kth)
            normal = torch.distributions.Normal(0.0, 1.0)
            load = normal.cdf((clean - threshold) / std).flatten(0, -2).sum(0)
        else:
            load = (rows > 0).sum(0).float()
        self.balance_loss = cv_squared(rows.sum(0)) + cv_squared(load)
        return weights


def cv_squared(x: Tensor) -> Tensor:
    """The squared coefficient of variation of x (0 for one value): small when even."""
    if x.numel() < 2:
        return x.new_zeros(())
    return x.float().var() / (x.float().mean() ** 2 + 1e-10)


class ChannelMask(nn.Module):
    """Which channels each channel's token may attend to, chosen per window from how alike
    their spectra are (DUET's channel clustering, Qiu et al. 2025).

    Channels i and j are compared by the magnitudes of their windows' real FFTs, each
    frequency weighed by a learned w_f: d_ij = Σ_f (w_f (|F_i,f| − |F_j,f|))². Channel j is
    kept for i with probability p_ij = 0.99 · (1/d_ij) / max_k≠i (1/d_ik): the nearest other
    channel almost always, one whose d is twice the nearest's half as often; p_ii = 0.99. In
    training the mask is a Bernoulli(p) sample, its 0/1 values carrying the gradient of a
    logistic relaxation (straight-through), as floating-point gates for
    :func:`~transduce.nn.attention.masked_softmax`; in evaluation it is each entry's more
    likely value, p > ½, so forecasts are deterministic.

    Departures from DUET's code, each for a stated reason: the windows are compared after
    instance normalisation (so the mask, like the tokens, ignores each channel's level and
    scale); w starts at ones, not random (no frequency favoured before training); and a
    dropped channel gets no weight, where DUET adds a constant score of about −1 to it.
    """

    def __init__(self, input_length: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(input_length // 2 + 1))  # (F,)

    def probabilities(self, x: Tensor) -> Tensor:
        """x (B, L, C) → p (B, C, C): channel j's probability of being kept for channel i."""
        with torch.autocast(x.device.type, enabled=False):  # no FFT in bfloat16
            spectra = torch.fft.rfft(x.float().transpose(1, 2), dim=-1).abs()  # (B, C, F)
            gaps = (spectra.unsqueeze(2) - spectra.unsqueeze(1)) * self.weight  # (B, C, C, F)
            closeness = 1 / (gaps.square().sum(-1) + 1e-10)  # (B, C, C)
            own = torch.eye(x.shape[2], dtype=torch.bool, device=x.device)
            closeness = closeness.masked_fill(own, 0.0)
            nearest = closeness.amax(-1, keepdim=True).detach().clamp_min(1e-30)
            return 0.99 * (closeness / nearest).masked_fill(own, 1.0)

    def forward(self, x: Tensor) -> Tensor:
        """x (B, L, C) → (B, C, C) gates: float 0/1 in training, boolean in evaluation."""
        p = self.probabilities(x)
        if not self.training:
            return p > 0.5
        p = p.clamp_min(1e-6)  # log(0) would give an infinite, then NaN, gradient
        u = torch.rand_like(p).clamp(1e-6, 1 - 1e-6)
        logits = torch.log(p) - torch.log1p(-p) + torch.log(u) - torch.log1p(-u)
        soft = torch.sigmoid(logits)  # > ½ exactly when the Bernoulli(p) sample is 1
        return (soft > 0.5).to(soft.dtype) + (soft - soft.detach())  # exactly 0 or 1
