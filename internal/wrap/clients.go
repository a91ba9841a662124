package wrap

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Env is what the config locations depend on; HostEnv reads it from the
// process, tests build their own.
type Env struct {
	GOOS      string
	Home      string
	XDGConfig string // $XDG_CONFIG_HOME
	AppData   string // %APPDATA% (Windows)
	CodexHome string // $CODEX_HOME
	Cwd       string // where project configs (.mcp.json, .vscode/mcp.json) are looked for
}

// HostEnv is the Env of this process.
func HostEnv() Env {
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	return Env{
		GOOS:      runtime.GOOS,
		Home:      home,
		XDGConfig: os.Getenv("XDG_CONFIG_HOME"),
		AppData:   os.Getenv("APPDATA"),
		CodexHome: os.Getenv("CODEX_HOME"),
		Cwd:       cwd,
	}
}

// config is $XDG_CONFIG_HOME, or ~/.config.
func (e Env) config() string {
	if e.XDGConfig != "" {
		return e.XDGConfig
	}
	return filepath.Join(e.Home, ".config")
}

// appSupport is where desktop apps keep their settings: ~/Library/Application
// Support on macOS, %APPDATA% on Windows, the XDG config directory elsewhere.
func (e Env) appSupport() string {
	switch e.GOOS {
	case "darwin":
		return filepath.Join(e.Home, "Library", "Application Support")
	case "windows":
		return e.AppData
	}
	return e.config()
}

// Spec says how to read one config file: its syntax and where its servers
// are (JSON: paths of member names, "*" for any; TOML: table names).
type Spec struct {
	Path     string
	Format   Format
	Sections [][]string // JSON
	Tables   []string   // TOML
	Scope    string     // "user" or "project", for --list
}

// Client is a program whose config rpctap knows.
type Client struct {
	Name  string
	About string // what is edited, for --help and --list
	Files func(Env) []Spec
	// Snippet, for clients configured in code (Neovim), is what to paste
	// instead; Files is nil for them.
	Snippet func(self, dir string, cmd []string) string
}

var mcpServers = [][]string{{"mcpServers"}}

// Clients are the known clients, by name.
var Clients = map[string]*Client{
	"claude-desktop": {
		Name: "claude-desktop", About: "claude_desktop_config.json mcpServers",
		Files: func(e Env) []Spec {
			return []Spec{{Path: filepath.Join(e.appSupport(), "Claude", "claude_desktop_config.json"), Sections: mcpServers, Scope: "user"}}
		},
	},
	"claude-code": {
		Name: "claude-code", About: "project .mcp.json mcpServers; ~/.claude.json mcpServers and projects[PATH].mcpServers",
		Files: func(e Env) []Spec {
			return []Spec{
				{Path: filepath.Join(e.Cwd, ".mcp.json"), Sections: mcpServers, Scope: "project"},
				{Path: filepath.Join(e.Home, ".claude.json"), Sections: [][]string{{"mcpServers"}, {"projects", "*", "mcpServers"}}, Scope: "user"},
			}
		},
	},
	"cursor": {
		Name: "cursor", About: "~/.cursor/mcp.json and project .cursor/mcp.json mcpServers",
		Files: func(e Env) []Spec {
			return []Spec{
				{Path: filepath.Join(e.Cwd, ".cursor", "mcp.json"), Sections: mcpServers, Scope: "project"},
				{Path: filepath.Join(e.Home, ".cursor", "mcp.json"), Sections: mcpServers, Scope: "user"},
			}
		},
	},
	"vscode": {
		Name: "vscode", About: ".vscode/mcp.json servers and the user profile's mcp.json",
		Files: func(e Env) []Spec {
			return []Spec{
				{Path: filepath.Join(e.Cwd, ".vscode", "mcp.json"), Sections: [][]string{{"servers"}}, Scope: "project"},
				{Path: filepath.Join(e.appSupport(), "Code", "User", "mcp.json"), Sections: [][]string{{"servers"}}, Scope: "user"},
			}
		},
	},
	"gemini": {
		Name: "gemini", About: "~/.gemini/settings.json and project .gemini/settings.json mcpServers",
		Files: func(e Env) []Spec {
			return []Spec{
				{Path: filepath.Join(e.Cwd, ".gemini", "settings.json"), Sections: mcpServers, Scope: "project"},
				{Path: filepath.Join(e.Home, ".gemini", "settings.json"), Sections: mcpServers, Scope: "user"},
			}
		},
	},
	"zed": {
		Name: "zed", About: "settings.json agent_servers (ACP) and context_servers (MCP)",
		Files: func(e Env) []Spec {
			// Zed keeps its settings in ~/.config/zed on macOS as well.
			dir := filepath.Join(e.config(), "zed")
			if e.GOOS == "windows" {
				dir = filepath.Join(e.AppData, "Zed")
			}
			secs := [][]string{{"agent_servers"}, {"context_servers"}}
			return []Spec{
				{Path: filepath.Join(e.Cwd, ".zed", "settings.json"), Sections: secs, Scope: "project"},
				{Path: filepath.Join(dir, "settings.json"), Sections: secs, Scope: "user"},
			}
		},
	},
	"codex": {
		Name: "codex", About: "~/.codex/config.toml [mcp_servers.NAME]",
		Files: func(e Env) []Spec {
			home := e.CodexHome
			if home == "" {
				home = filepath.Join(e.Home, ".codex")
			}
			return []Spec{{Path: filepath.Join(home, "config.toml"), Format: TOML, Tables: []string{"mcp_servers"}, Scope: "user"}}
		},
	},
	"helix": {
		Name: "helix", About: "languages.toml [language-server.NAME]",
		Files: func(e Env) []Spec {
			dir := filepath.Join(e.config(), "helix")
			if e.GOOS == "windows" {
				dir = filepath.Join(e.AppData, "helix")
			}
			return []Spec{
				{Path: filepath.Join(e.Cwd, ".helix", "languages.toml"), Format: TOML, Tables: []string{"language-server"}, Scope: "project"},
				{Path: filepath.Join(dir, "languages.toml"), Format: TOML, Tables: []string{"language-server"}, Scope: "user"},
			}
		},
	},
	"neovim": {
		Name: "neovim", About: "configured in Lua: prints the snippet to paste",
		Snippet: func(self, dir string, cmd []string) string {
			parts := []string{luaQuote(self), luaQuote("record"), luaQuote("--dir"), luaQuote(dir), luaQuote("--")}
			if len(cmd) == 0 {
				cmd = []string{"SERVER", "ARGS..."}
			}
			for _, c := range cmd {
				parts = append(parts, luaQuote(c))
			}
			return "-- In the server's config (vim.lsp.config, lspconfig's setup{}, or your MCP plugin's\n" +
				"-- server table), put rpctap in front of the command; its env and cwd stay as they are:\n" +
				"cmd = { " + strings.Join(parts, ", ") + " },\n"
		},
	},
}

func luaQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// ClientNames are the known clients' names, sorted.
func ClientNames() []string {
	var n []string
	for k := range Clients {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// GuessSpec is how a file named with --config and no client is read: TOML
// by its extension, else JSON; every section any known client uses.
func GuessSpec(path string) Spec {
	if strings.EqualFold(filepath.Ext(path), ".toml") {
		return Spec{Path: path, Format: TOML, Tables: []string{"mcp_servers", "language-server"}}
	}
	return Spec{Path: path, Sections: [][]string{
		{"mcpServers"}, {"servers"}, {"agent_servers"}, {"context_servers"}, {"projects", "*", "mcpServers"},
	}}
}

// Parse reads the entries of src as spec says.
func (s Spec) Parse(src []byte) ([]Entry, error) {
	if s.Format == TOML {
		var out []Entry
		for _, t := range s.Tables {
			es, err := parseTOML(src, t)
			if err != nil {
				return nil, err
			}
			out = append(out, es...)
		}
		return out, nil
	}
	return parseJSON(src, s.Sections)
}
