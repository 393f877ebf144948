// Package lineproto serves the legacy TCP line protocol that game-server mods speak (the
// UT2004 team-balancing seed): a mod tells the server which game and mutators are running and
// asks for the 0..100 weights of players and bots in that game's rating context.
//
// # Protocol
//
// One command a line, ended by "\n" or "\r\n". Keywords are case-insensitive; the words of a
// line are separated by white space. The id of PLAYER and BOT is the rest of the line, so it
// may hold the single spaces between words the id rule allows ("PLAYER Boring John"); game
// types, mutators and secrets are one word. Replies come in the order of the commands, one
// line each, and echo the id as sent: a client reads the weight after the id it asked for
// (not as the line's last word: "PLAYER Boring 61.27" is also the reply for an unrated
// player whose id is "Boring 61.27"). GAME and MUTATOR have no reply unless they fail.
//
//	GAME type      a new game of this type starts; forgets the connection's mutators
//	MUTATOR name   the game runs this mutator; the store's mutator policy decides whether it
//	               splits the rating context (only gameplay mutators do)
//	PLAYER id   -> PLAYER id weight, or PLAYER id when the player has no rating in the context
//	BOT name    -> BOT name weight; a bot without a rating gets the context's mean bot weight
//	               (50 when the context has no rated bot), as the seed wants a weight always
//	MEANBOT     -> MEANBOT weight count (50 0 without bots)
//	AUTH secret    the shared secret (Config.SecretHash); no reply when it is right
//
// When the server has a secret, a connection's first command must be AUTH with it, within
// Config.AuthTimeout: any other command, or a wrong secret, is answered "ERROR auth
// required: send AUTH <secret> first" or "ERROR auth failed" and the connection is closed.
// Without a secret, AUTH is accepted and ignored, so a mod may always send it.
//
// Weights have two decimals ("PLAYER alice 61.27"). The rating context is
// MutatorPolicy.Context(game, mutators) under the policy read from the store at the first
// query after GAME or a new MUTATOR, and kept until the next one: an admin's reclassification
// of a mutator applies from the next game.
//
// Errors are one line, "ERROR reason", and leave the connection usable:
//
//	ERROR no GAME yet                a MUTATOR, PLAYER, BOT or MEANBOT before any GAME (or after
//	                                 an invalid GAME, which ends the previous game)
//	ERROR unknown command "X"        and missing, extra or invalid arguments (see ParseLine)
//	ERROR too many mutators (...)    past Config.MaxMutators distinct mutators in one game;
//	                                 the mutator is ignored
//	ERROR line too long              a line over Config.MaxLineBytes; it is skipped up to its
//	                                 newline (the client is disconnected if 64 KiB more come
//	                                 without one)
//	ERROR store unavailable          the store failed or took longer than
//	                                 Config.CommandTimeout
//
// and, just before the server closes the connection:
//
//	ERROR idle timeout               no command for Config.IdleTimeout (empty lines do
//	                                 not count), or no AUTH within Config.AuthTimeout
//	ERROR too many connections       Config.MaxConns connections are already open
//	ERROR too many connections from your address
//	                                 Config.MaxConnsPerAddr are open from the client's address
//	ERROR auth required: ...         and ERROR auth failed, see AUTH above
//
// Empty lines are ignored. A final line without "\n" before the client half-closes is
// answered.
package lineproto
