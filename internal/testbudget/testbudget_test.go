package testbudget

import "testing"

func TestPick(t *testing.T) {
	t.Setenv(EnvVar, "")
	if got := Pick(3, 200); got != 3 {
		t.Errorf("quick: Pick(3, 200) = %d, want 3", got)
	}
	t.Setenv(EnvVar, "1")
	if got := Pick(3, 200); got != 200 {
		t.Errorf("full: Pick(3, 200) = %d, want 200", got)
	}
	t.Setenv(EnvVar, "yes")
	if Full() {
		t.Errorf("%s=yes selected the full budgets; only 1 does", EnvVar)
	}
}
