package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) proofCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "proof",
		Short: "Print a decryption proof of your balances, built locally with your key",
		Long: `Print a decryption proof over the account's current balances, for a client
in another language to read its figures through GET /v1/accounts/me/balances
(the decryption_proof member of the JSON body, or the query parameter).

The proof is built on this machine with your decryption key
(CONFPAY_DECRYPTION_KEY or --decryption-key-file), which never leaves it, so
it works against the real service as against a fakeserver. A proof opens
the figures it covers to whoever holds it: treat it as a secret. It goes
stale on the account's next balance change (422 decryption_proof_invalid,
reason stale): build another.`,
		Args: exactArgs(),
		Example: `  confpay proof --decryption-key-file ~/.confpay/key
  curl -s "$CONFPAY_BASE_URL/v1/accounts/me/balances" -H "Authorization: Bearer $CONFPAY_API_KEY" \
    -H 'Content-Type: application/json' -X GET -d "{\"decryption_proof\":\"$(confpay proof)\"}"`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			key, err := a.decryptionKey()
			if err != nil {
				return err
			}
			if key == nil {
				return usagef("confpay proof needs your decryption key: set %s or pass --decryption-key-file", envDecryptionKey)
			}
			p, err := c.Accounts.ProveBalances(cmd.Context(), key)
			if wrongKey(err) {
				return usagef("the decryption key is not this account's key")
			}
			if err != nil {
				return err
			}
			if p == nil {
				return &codedError{exitError, "the account holds no balance on " + networkLine(c) + ": nothing to prove"}
			}
			if a.jsonOut {
				return a.printJSON(map[string]string{"decryption_proof": p.DecryptionProof})
			}
			_, err = fmt.Fprintln(a.stdout, p.DecryptionProof)
			return err
		},
	}
}
