package queue

// Assignments is what each ticket of m is told when the match is made.
func Assignments(m Match) map[string]Assignment { return assignments(m) }
