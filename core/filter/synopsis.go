package filter

// Synopsis is the filter language in two sentences, for a place with no room
// for Reference (a tool description, so one line: Markdown tables of the
// descriptions break on a newline): the shape of a term, every operator,
// five key fields and one example. Every operator, field and alias it names is
// checked against the compiler's own tables (TestSynopsisNamesTheRealGrammar),
// and SynopsisExample compiles.
const Synopsis = "FIELD OP VALUE, and/or/not, ( ); OP == != < <= > >= =~(regex); or an alias (problems). " +
	"Fields: method, state, status, from.user, rtp.mos. E.g. " + SynopsisExample + "."

// SynopsisExample is the example Synopsis gives.
const SynopsisExample = "state == Failed and from.user =~ ^44"

// synopsisFields are the fields Synopsis names.
var synopsisFields = []string{"method", "state", "status", "from.user", "rtp.mos"}
