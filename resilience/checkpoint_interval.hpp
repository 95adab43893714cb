#pragma once
// Optimal checkpoint intervals, the first-order waste model and Daly's complete model. Pure functions; every
// time is in seconds.
//
//   C  checkpoint cost (blocking save time, Daly's δ)      M  mean time between failures of the whole job
//   R  restart cost after a failure (detection + relaunch + restore)    T  compute time between checkpoints
//   W  asynchronous saves: the background write from the end of a save's blocking part until it is durable
//      (0: synchronous). One write is in flight at a time: a write longer than T holds the next save back.
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
//
// With asynchronous saves (W > 0), the expansion of exponential_goodput's async form to first order in 1/M
// and in C: a save's cycle takes max(T, W) + C (a write longer than T holds the next save back), of which the
// job computes T, and a failure loses T/2 + min(W, T) + max(0, W − T)/2 (the interval whose write had not
// landed too): (T / max(T, W))·(1 − first_order_overhead). The factor T / max(T, W) is kept whole, not
// linearised: a holdback W − T is rarely small beside T. Valid while C, R, T, W ≪ M.
double first_order_goodput(double interval_s, double checkpoint_s, double restart_s, double mtbf_s,
                           double commit_s = 0);

// The first-order waste terms: C/max(T, W) + (T/2 + min(W, T) + max(0, W − T)/2)/M + R/M (at W = 0, Young's
// C/T + T/2M + R/M). From 1 on, first_order_goodput reads 0: the formula no longer applies.
double first_order_overhead(double interval_s, double checkpoint_s, double restart_s, double mtbf_s,
                            double commit_s = 0);

// Goodput of Daly 2006's complete model for exponentially distributed failures, where a failure may also
// strike during a checkpoint save or a restart (which then starts over): the expected wall time of T_s of
// work is T_w = M·e^{R/M}·(e^{(T+C)/M} − 1)·T_s/T, so goodput = T / (M·e^{R/M}·(e^{(T+C)/M} − 1)). It tends
// to T/(T+C) as M grows, agrees with first_order_goodput to first order in C/M, T/M, R/M, and stays valid
// when they are not small (first_order_goodput then reads far too low, or 0). Daly's interval maximises it
// (to the order of Daly's estimate). 0 where the exponentials overflow.
//
// Asynchronous saves (W > 0), by the same renewal argument (ours; Daly's model has W = 0): between two
// checkpoints becoming durable the job needs L1 = C + max(T, W) without a failure (T of new work). A failure
// there rolls back to the last durable checkpoint, and after the restart the next save blocks C alone (no
// write in flight) and becomes durable W later: every retry needs L2 = T + C + W. So the expected wall time
// of T of work is (1 − e^{−L1/M})·e^{L2/M}·M·e^{R/M}, and goodput is T over it; W = 0 gives the formula
// above (L1 = L2 = T + C).
double exponential_goodput(double interval_s, double checkpoint_s, double restart_s, double mtbf_s,
                           double commit_s = 0);

}  // namespace fb::resilience
