package db

// SQLTryAnalyzeRound is AnalyzeGrown's claim of a round, for a test that stands for another
// replica's round under way.
const SQLTryAnalyzeRound = sqlTryAnalyzeRound
