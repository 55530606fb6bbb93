package main

import (
	"fmt"

	"github.com/spf13/cobra"

	confpay "github.com/confpay/confpay-go"
)

func (a *app) meCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "me",
		Short:   "Show the account the API key belongs to, and its network",
		Args:    exactArgs(),
		Example: "  confpay me\n  confpay me --json | jq -r .handle",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			me, err := c.Accounts.Me(cmd.Context())
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(me)
			}
			return a.fields(
				[2]string{"Handle", clean(me.Handle)},
				[2]string{"Account", clean(me.AccountID)},
				[2]string{"Type", clean(string(me.Type))},
				[2]string{"Network", networkLine(c)},
				[2]string{"KYC", clean(string(me.KYCStatus))},
				[2]string{"Address", clean(me.PublicKey)},
				[2]string{"Encryption key", orDash(clean(me.EncryptionKey))},
				[2]string{"Created", fmtTime(me.CreatedAt)},
			)
		},
	}
}

func (a *app) balancesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "balances",
		Short: "Show balances: figures with a decryption key, else which are non-zero",
		Long: `Show the account's balances.

Balances are encrypted. With your decryption key (CONFPAY_DECRYPTION_KEY or
--decryption-key-file), confpay opens them locally, proves the figures to the
service and shows them. Without it, the service only says which assets are
non-zero.`,
		Args: exactArgs(),
		Example: `  confpay balances
  CONFPAY_DECRYPTION_KEY=$(cat ~/.confpay/key) confpay balances
  confpay balances --decryption-key-file ~/.confpay/key --json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			key, err := a.decryptionKey()
			if err != nil {
				return err
			}
			var bals []*confpay.Balance
			if key != nil {
				bals, err = c.Accounts.ReadBalances(cmd.Context(), key)
				if wrongKey(err) {
					return usagef("the decryption key is not this account's key")
				}
			} else {
				bals, err = c.Accounts.Balances(cmd.Context(), nil)
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(confpay.BalanceList{Balances: bals})
			}
			fmt.Fprintf(a.stdout, "Balances on %s\n", networkLine(c))
			if len(bals) == 0 {
				fmt.Fprintln(a.stdout, "No balance yet.")
				return nil
			}
			t := a.newTable("ASSET", "BALANCE")
			for _, b := range bals {
				t.row(clean(b.Asset), balanceText(b))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if key == nil {
				fmt.Fprintf(a.stdout, "Figures are encrypted: set %s or pass --decryption-key-file to read them.\n", envDecryptionKey)
			}
			return nil
		},
	}
}

// balanceText is a balance's figure, or whether it is non-zero.
func balanceText(b *confpay.Balance) string {
	switch {
	case b.Amount != nil:
		return b.Amount.String()
	case b.Nonzero != nil && *b.Nonzero:
		return "non-zero"
	case b.Nonzero != nil:
		return "zero"
	}
	return "unknown"
}
