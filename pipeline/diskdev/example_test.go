package diskdev_test

import (
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/pipeline/diskdev"
)

// A disk the system will not open for want of a right is a
// *PermissionError that says which right, matched by ErrPermission
// through whatever wraps it: here Windows's refusal of a process without
// an administrator's rights.
func ExamplePermissionError() {
	err := fmt.Errorf("disk:%s: %w", `\\.\PhysicalDrive2`,
		&diskdev.PermissionError{Path: `\\.\PhysicalDrive2`, Need: "an administrator", Err: errors.New("Access is denied.")})
	var pe *diskdev.PermissionError
	fmt.Println(errors.Is(err, diskdev.ErrPermission))
	fmt.Println(errors.As(err, &pe), pe.Need)
	fmt.Println(err)
	// Output:
	// true
	// true an administrator
	// disk:\\.\PhysicalDrive2: opening \\.\PhysicalDrive2 needs an administrator: Access is denied.
}
