package schema

// Catalog returns every table this module defines, for checks that must
// cover all of them (for example that CloudFormation and CreateTable agree).
func Catalog() []Table {
	return []Table{Events()}
}
