#pragma once
// Optimal checkpoint intervals, the first-order waste model and Daly's complete model. Pure functions; every
// time is in seconds.
//
//   C  checkpoint cost (blocking save time, Daly's δ)      M  mean time between failures of the whole job
//   R  restart cost after a failure (detection + relaunch + restore)    T  compute time between checkpoints
//
// Sources: J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974;
// J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps", FGCS 22(3),
// 2006. Every function throws a usage Error when an argument is not finite and positive (R may be zero).

namespace fb::resilience {

// Young 1974: T* = √(2·C·M).
double young_interval(double checkpoint_s, double mtbf_s);

// Daly 2006 (higher-order estimate): T* = √(2δM)·[1 + ⅓·√(δ/(2M)) + (δ/(2M))/9] − δ for δ < 2M, else T* = M.
double daly_interval(double checkpoint_s, double mtbf_s);

// First-order fraction of wall time lost at Young's interval: √(2C/M) + R/M (Young 1974; the R/M term charges
// each failure its restart). REFERENCES.md: M = 185.6 min, C = 1 min, R = 0 → 10.4%.
double first_order_waste(double checkpoint_s, double restart_s, double mtbf_s);

// First-order goodput at interval T: 1 − C/T − T/(2M) − R/M, clamped to [0, 1]. Per unit of wall time a job
// pays C/T for checkpoints, loses on average half an interval of work per failure (T/2 · 1/M) and R per
// failure (R/M). At T = Young's interval it equals 1 − first_order_waste. Valid while C, R, T ≪ M.
double first_order_goodput(double interval_s, double checkpoint_s, double restart_s, double mtbf_s);

// Goodput of Daly 2006's complete model for exponentially distributed failures, where a failure may also
// strike during a checkpoint save or a restart (which then starts over): the expected wall time of T_s of
// work is T_w = M·e^{R/M}·(e^{(T+C)/M} − 1)·T_s/T, so goodput = T / (M·e^{R/M}·(e^{(T+C)/M} − 1)). It tends
// to T/(T+C) as M grows, agrees with first_order_goodput to first order in C/M, T/M, R/M, and stays valid
// when they are not small (first_order_goodput then reads far too low, or 0). Daly's interval maximises it
// (to the order of Daly's estimate). 0 where the exponentials overflow.
double exponential_goodput(double interval_s, double checkpoint_s, double restart_s, double mtbf_s);

}  // namespace fb::resilience
