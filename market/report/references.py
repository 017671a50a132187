"""The works the report's related-work paragraphs cite, in full, listed at its end."""

from __future__ import annotations

import re

REFERENCES: tuple[str, ...] = (
    "Axelrod, R. (1984). *The Evolution of Cooperation*. New York: Basic Books.",
    "Baarslag, T., Fujita, K., Gerding, E. H., Hindriks, K., Ito, T., Jennings, N. R., "
    "Jonker, C., Kraus, S., Lin, R., Robu, V. and Williams, C. R. (2013). Evaluating practical "
    "negotiating agents: results and analysis of the 2011 international competition. "
    "*Artificial Intelligence* 198, 73-103.",
    "Binmore, K., Rubinstein, A. and Wolinsky, A. (1986). The Nash bargaining solution in "
    "economic modelling. *RAND Journal of Economics* 17(2), 176-188.",
    "Binmore, K., Shaked, A. and Sutton, J. (1985). Testing noncooperative bargaining theory: "
    "a preliminary study. *American Economic Review* 75(5), 1178-1180.",
    "Busoniu, L., Babuska, R. and De Schutter, B. (2008). A comprehensive survey of "
    "multiagent reinforcement learning. *IEEE Transactions on Systems, Man, and Cybernetics, "
    "Part C* 38(2), 156-172.",
    "Calvano, E., Calzolari, G., Denicolò, V. and Pastorello, S. (2020). Artificial "
    "intelligence, algorithmic pricing, and collusion. *American Economic Review* 110(10), "
    "3267-3297.",
    "Claus, C. and Boutilier, C. (1998). The dynamics of reinforcement learning in cooperative "
    "multiagent systems. *Proceedings of AAAI-98*, 746-752.",
    "Cliff, D. and Bruten, J. (1997). Minimal-intelligence agents for bargaining behaviors in "
    "market-based environments. HP Laboratories technical report HPL-97-91.",
    "Gale, J., Binmore, K. and Samuelson, L. (1995). Learning to be imperfect: the ultimatum "
    "game. *Games and Economic Behavior* 8(1), 56-90.",
    "Gode, D. K. and Sunder, S. (1993). Allocative efficiency of markets with "
    "zero-intelligence traders: market as a partial substitute for individual rationality. "
    "*Journal of Political Economy* 101(1), 119-137.",
    "Güth, W., Schmittberger, R. and Schwarze, B. (1982). An experimental analysis of "
    "ultimatum bargaining. *Journal of Economic Behavior and Organization* 3(4), 367-388.",
    "Lanctot, M., Zambaldi, V., Gruslys, A., Lazaridou, A., Tuyls, K., Pérolat, J., Silver, "
    "D. and Graepel, T. (2017). A unified game-theoretic approach to multiagent reinforcement "
    "learning. *Advances in Neural Information Processing Systems* 30.",
    "Lanctot, M., Lockhart, E., Lespiau, J.-B., Zambaldi, V., Upadhyay, S., Pérolat, J., "
    "Srinivasan, S., Timbers, F., Tuyls, K., Omidshafiei, S. et al. (2019). OpenSpiel: a "
    "framework for reinforcement learning in games. arXiv:1908.09453.",
    "Ma, C. A. and Manove, M. (1993). Bargaining with deadlines and imperfect player control. "
    "*Econometrica* 61(6), 1313-1339.",
    "Mohammad, Y., Nakadai, S. and Greenwald, A. (2021). NegMAS: a platform for automated "
    "negotiations. In *PRIMA 2020: Principles and Practice of Multi-Agent Systems*, LNCS "
    "12568, 343-351. Springer.",
    "Nowak, M. A., Sasaki, A., Taylor, C. and Fudenberg, D. (2004). Emergence of cooperation "
    "and evolutionary stability in finite populations. *Nature* 428, 646-650.",
    "Neelin, J., Sonnenschein, H. and Spiegel, M. (1988). A further test of noncooperative "
    "bargaining theory: comment. *American Economic Review* 78(4), 824-836.",
    "Omidshafiei, S., Papadimitriou, C., Piliouras, G., Tuyls, K., Rowland, M., Lespiau, "
    "J.-B., Czarnecki, W. M., Lanctot, M., Perolat, J. and Munos, R. (2019). alpha-Rank: "
    "multi-agent evaluation by evolution. *Scientific Reports* 9, 9937.",
    "Roth, A. E., Murnighan, J. K. and Schoumaker, F. (1988). The deadline effect in "
    "bargaining: some experimental evidence. *American Economic Review* 78(4), 806-823.",
    "Rubinstein, A. (1982). Perfect equilibrium in a bargaining model. *Econometrica* 50(1), "
    "97-109.",
    "Schlag, K. H. (1998). Why imitate, and if so, how? A boundedly rational approach to "
    "multi-armed bandits. *Journal of Economic Theory* 78(1), 130-156.",
    "Smith, V. L. (1962). An experimental study of competitive market behavior. *Journal of "
    "Political Economy* 70(2), 111-137.",
    "Ståhl, I. (1972). *Bargaining Theory*. Stockholm: Economic Research Institute, Stockholm "
    "School of Economics.",
    "Sutton, R. S. and Barto, A. G. (2018). *Reinforcement Learning: An Introduction*, 2nd "
    "edition. Cambridge, MA: MIT Press.",
    "Traulsen, A., Shoresh, N. and Nowak, M. A. (2008). Analytical results for individual and "
    "group selection of any intensity. *Bulletin of Mathematical Biology* 70(5), 1410-1424.",
    "Watkins, C. J. C. H. and Dayan, P. (1992). Q-learning. *Machine Learning* 8(3-4), "
    "279-292.",
    "Wolpert, D. H. and Tumer, K. (2002). Optimal payoff functions for members of "
    "collectives. *Advances in Complex Systems* 4(2-3), 265-279.",
)


def cited(text: str) -> list[str]:
    """The references ``text`` cites: its first author's surname and its year both appear."""
    out = []
    for ref in REFERENCES:
        surname = ref.split(",")[0]
        year = re.search(r"\((\d{4})\)", ref)
        if surname in text and year is not None and year.group(1) in text:
            out.append(ref)
    return out


def markdown(text: str) -> str:
    """The references ``text`` cites, as the report's closing section."""
    return "\n".join(["## References", "", *(f"- {r}" for r in cited(text)), ""])
