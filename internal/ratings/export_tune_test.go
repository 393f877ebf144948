package ratings

// OnlineLoss is onlineLoss for the external tests.
var OnlineLoss = onlineLoss
