package catalog

// Names are the entries' names, in order (for completing one).
func Names(entries []Entry) []string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return names
}
