package queue

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Webhooks are posted by the service from inside its network, to a URL an admin key chose: a
// URL naming the database (127.0.0.1:5432), the cloud's metadata service (169.254.169.254) or
// any other internal address would make the service a proxy into its own network. So a
// webhook may reach only public addresses unless the operator allows more
// (MATCHMAKER_WEBHOOK_ALLOW_CIDRS, for receivers on premises). The rule is checked twice:
// when a queue is defined (an address or a well-known internal name in its URL is refused
// with a 400 naming webhook.url) and when every connection is dialled, on the address the
// name resolved to, so that a name which resolves to a public address when the queue is
// defined and to an internal one later (DNS rebinding) is refused too. Redirects are not
// followed, and no proxy from the environment is used (the check would see the proxy's
// address, not the receiver's).

// blockedPrefixes are the ranges a webhook may not reach unless allowed, beside those
// netip.Addr's predicates name (loopback, private, link-local, multicast, unspecified), by the
// class an error names.
var blockedPrefixes = []struct {
	prefix netip.Prefix
	class  string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

// internalNames are host names that name the machine itself or a cloud's metadata service,
// by the address they stand for when checked against the allow-list.
var internalNames = map[string]netip.Addr{
	"localhost":                  netip.MustParseAddr("127.0.0.1"),
	"metadata":                   netip.MustParseAddr("169.254.169.254"),
	"metadata.google.internal":   netip.MustParseAddr("169.254.169.254"),
	"metadata.goog":              netip.MustParseAddr("169.254.169.254"),
	"instance-data":              netip.MustParseAddr("169.254.169.254"),
	"instance-data.ec2.internal": netip.MustParseAddr("169.254.169.254"),
}

// WebhookPolicy is which addresses webhooks may reach: every public address, and those in
// Allow.
type WebhookPolicy struct {
	Allow []netip.Prefix
}

// ParseWebhookAllow reads MATCHMAKER_WEBHOOK_ALLOW_CIDRS: comma-separated CIDR prefixes (a
// bare address is its own /32 or /128), e.g. "10.20.0.0/16,fd00:1::/64".
func ParseWebhookAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		p, err := netip.ParsePrefix(entry)
		if err != nil {
			a, aerr := netip.ParseAddr(entry)
			if aerr != nil {
				return nil, fmt.Errorf("%q is neither a CIDR prefix nor an address", entry)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// blockedClass is the class of internal address a is in, "" for a public one.
func blockedClass(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local (cloud metadata)"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	for _, b := range blockedPrefixes {
		if b.prefix.Contains(a) {
			return b.class
		}
	}
	return ""
}

// CheckAddr refuses an internal address that no allowed prefix covers: the outbound
// client's check of every connection it dials.
func (p WebhookPolicy) CheckAddr(a netip.Addr) error {
	a = a.WithZone("").Unmap()
	class := blockedClass(a)
	if class == "" {
		return nil
	}
	for _, allowed := range p.Allow {
		if allowed.Contains(a) {
			return nil
		}
	}
	return fmt.Errorf("%s is a %s address, which webhooks may not reach unless MATCHMAKER_WEBHOOK_ALLOW_CIDRS allows it", a, class)
}

// CheckURL is the policy's rule for a webhook URL when a queue is defined: an address in it
// must be allowed, written in standard notation, and a name must not be one that stands for
// the machine itself or a metadata service (unless its address is allowed). Names are not
// resolved here: the dial-time check sees what they resolve to at each delivery.
func (p WebhookPolicy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return apperr.Field("webhook.url", "must be an absolute http or https URL")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		if err := p.CheckAddr(a); err != nil {
			return apperr.Field("webhook.url", "%s", err)
		}
		return nil
	}
	if numericHost(host) {
		// 0x7f000001, 2130706433, 127.1 and 0177.0.0.1 are all 127.0.0.1 to some resolvers.
		return apperr.Field("webhook.url", "must name its host, or give an IP address in standard notation")
	}
	name := host
	if strings.HasSuffix(name, ".localhost") {
		name = "localhost"
	}
	if a, internal := internalNames[name]; internal {
		if err := p.CheckAddr(a); err != nil {
			return apperr.Field("webhook.url", "%s names %s", host, err)
		}
	}
	return nil
}

// numericHost reports whether host's last label is a number, which URL parsers and
// inet_aton take as an IPv4 address in some notation (decimal, octal or hex, with 1 to 4
// parts); no top-level domain is numeric.
func numericHost(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	digits := last
	if strings.HasPrefix(last, "0x") {
		digits = last[2:]
		return strings.Trim(digits, "0123456789abcdef") == ""
	}
	return strings.Trim(digits, "0123456789") == ""
}
