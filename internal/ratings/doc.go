// Package ratings learns player ratings from match results: the NS2 logistic team model
// (time-weighted participation, side bias, Adagrad plus a constant learning rate, per-side
// offsets, commander skill), rating contexts (game type plus gameplay mutators), and the Store
// interface the service keeps ratings behind. It knows nothing of HTTP or SQL.
package ratings
