// Command validationpreload prints the jsii kernel's validation-worker
// preload (jsiienv.ValidationPreload), so that scripts/synth-twin.sh can
// load the same module into the JavaScript twin (SYNTH_TWIN_TUNED=1).
package main

import (
	"fmt"

	"github.com/triggers-dev/triggers/internal/synth/jsiienv"
)

func main() {
	fmt.Print(jsiienv.ValidationPreload)
}
