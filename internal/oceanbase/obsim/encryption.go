package obsim

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
)

// Backup encryption, OceanBase's password mode. SET ENCRYPTION ON
// IDENTIFIED BY 'pw' ONLY makes the backups its session starts encrypted
// with pw (DBA_OB_BACKUP_JOBS.ENCRYPTION_MODE PASSWORD_ONLY; SET ENCRYPTION
// OFF ends it); SET DECRYPTION IDENTIFIED BY 'pw'[, 'pw2'...] gives the
// session's restores the passwords of encrypted backup sets, and a restore
// that reads a set none of them opens fails. Both last as long as the
// connection. Simulated: a set's files are not encrypted, they record a
// hash of the password.

// Encryption modes (DBA_OB_BACKUP_JOBS.ENCRYPTION_MODE).
const (
	EncryptionNone         = "NONE"
	EncryptionPasswordOnly = "PASSWORD_ONLY"
)

// setCrypto runs SET ENCRYPTION and SET DECRYPTION, p past SET.
func setCrypto(c *mysql.Conn, p *parser) (*result, *Error) {
	st := connOf(c)
	switch {
	case p.keywords("ENCRYPTION", "OFF"):
		st.encryption = ""
	case p.keywords("ENCRYPTION", "ON", "IDENTIFIED", "BY"):
		pw, err := p.value()
		if err != nil {
			return nil, err
		}
		if !p.keywords("ONLY") {
			return nil, invalid("Invalid argument: the simulator encrypts backups with a password ONLY (no transparent encryption)")
		}
		if pw == "" {
			return nil, invalid("Invalid argument: an empty backup password")
		}
		st.encryption = pw
	case p.keywords("DECRYPTION", "IDENTIFIED", "BY"):
		var pws []string
		for {
			pw, err := p.value()
			if err != nil {
				return nil, err
			}
			pws = append(pws, pw)
			if !p.punct(',') {
				break
			}
		}
		st.decryption = pws
	default:
		return nil, p.syntax()
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return &result{}, nil
}

// isCryptoSet reports whether q is SET ENCRYPTION or SET DECRYPTION.
func isCryptoSet(q string) bool {
	f := strings.Fields(strings.ToUpper(q))
	return len(f) > 1 && f[0] == "SET" && (f[1] == "ENCRYPTION" || f[1] == "DECRYPTION")
}

// passwordHash is what a backup set records of its password.
func passwordHash(pw string) string {
	if pw == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("obsim-backup:" + pw))
	return hex.EncodeToString(sum[:])
}

// encryptionMode is a job's ENCRYPTION_MODE.
func encryptionMode(passwordHash string) string {
	if passwordHash == "" {
		return EncryptionNone
	}
	return EncryptionPasswordOnly
}

// opens reports whether one of the hashes is the set's password's.
func opens(hashes []string, setHash string) bool {
	return setHash == "" || slices.Contains(hashes, setHash)
}
