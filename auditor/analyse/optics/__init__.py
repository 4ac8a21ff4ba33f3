"""Transceiver diagnostics trends (issue #14): the watch list.

A laser ages by raising its Tx bias to hold its Tx power, a dirty or cracked fibre takes one
lane's light away, a module runs hot: the diagnostics every module reports (SFF-8636 / CMIS
DDM, read by `ethtool -m`, `mlxlink -m`, the Onyx CLI or SNMP and kept as history in the store)
show it days before the link flaps. From that history and each module's own alarm and warning
thresholds, per module and lane:

- **drift**: a quantity moving toward the module's warning (or, once past it, alarm) threshold,
  with the days until it gets there; a lane already past its warning threshold is watched even
  when it holds still (`past_warning`);
- **siblings**: one lane's Rx power several dB below the module's other lanes;
- **link budget**: the Rx power far below what the peer end sends (its Tx power on the same
  lane), or that loss growing: the peer comes from the topology (the reading's port -> the
  link's other end), so both ends must be read;
- **cohort**: far off the modules of the same part number and firmware (robust z-score);
- **laser ageing**: Tx bias rising while temperature and Vcc hold still.

A threshold a module reports as 0 (stored as null) is no limit. Each rule gives a finding with
one sentence and its numbers, and a strength in 0..1; a lane's findings combine as independent
evidence (1 - product of (1 - s)). The watch list is one entry per module and lane (None: the
module as a whole), strongest first. `auditor.analyse.rank` makes a link a `transceiver`
suspect once the evidence is strong (`Watch.strong`, or a trend on a link that also flapped).

Fits are on daily medians: a sweep may read a module several times a day or skip a day, and
the median keeps one reading taken while the link retrained from steering the day. The line
through them is Theil-Sen (the median of the slopes between every pair of days, the intercept
the median of y - slope x): it ignores up to ~29 % of wild days (a reading of a dark lane while
the peer host rebooted) where least squares follows them; over 30 daily points it is 435
slopes, fitted for every series at once (`fit_all`). The fitted change over the history counts
as a trend when it is `noise_ratio` times the residuals' own scatter (1.4826 x their MAD, a
robust standard deviation) and above a floor per quantity (quantisation and calibration
wobble). "Any trend on a link that flapped" is a watch of at least FLAPPED_MIN (not a lone
cohort outlier).

The list is computed a bucket of whole devices at a time (issue #25: every module's history at
once took more than 9 GB at 65,536 modules x 30 days): a bucket's readings come from the store
as numpy columns, their daily medians, series and fits are laid out in numpy (`histories_of`,
the same histories `histories` and `fit_all` make of DuckDB's own daily medians), and the rules
of one module's own history run there (`Assessment.add`). What needs other modules waits for
the end (`Assessment.finish`): the cohort (a few levels a module) and the link budget (the Rx
and Tx series of the modules whose far end was read).
"""
