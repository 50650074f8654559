//! The tool names Relay matches on: Pi's built-in tools and Relay's own, each a case, and every
//! other name an explicit [`ToolName::Other`] (a tool of another extension, or one a later Pi
//! adds), never a string comparison with a silent default.

use crate::args;

/// A tool name as Pi's hooks carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolName<'a> {
    /// Pi's built-in `bash`.
    Bash,
    /// Pi's built-in `read`.
    Read,
    /// Pi's built-in `write`.
    Write,
    /// Pi's built-in `edit`.
    Edit,
    HistoryListWindows,
    HistoryListItems,
    HistoryReadItem,
    HistorySearchContents,
    NotesListFilesByPrefix,
    NotesReadFile,
    NotesSearchContents,
    NotesAppendToFile,
    NotesWriteFile,
    NewContext,
    ContextHandoff,
    GetContextRemaining,
    /// Anthropic's memory-tool shape over the notes.
    Memory,
    /// Any other tool.
    Other(&'a str),
}

impl<'a> ToolName<'a> {
    pub fn of(name: &'a str) -> Self {
        match name {
            "bash" => ToolName::Bash,
            "read" => ToolName::Read,
            "write" => ToolName::Write,
            "edit" => ToolName::Edit,
            args::HISTORY_LIST_WINDOWS => ToolName::HistoryListWindows,
            args::HISTORY_LIST_ITEMS => ToolName::HistoryListItems,
            args::HISTORY_READ_ITEM => ToolName::HistoryReadItem,
            args::HISTORY_SEARCH_CONTENTS => ToolName::HistorySearchContents,
            args::NOTES_LIST_FILES_BY_PREFIX => ToolName::NotesListFilesByPrefix,
            args::NOTES_READ_FILE => ToolName::NotesReadFile,
            args::NOTES_SEARCH_CONTENTS => ToolName::NotesSearchContents,
            args::NOTES_APPEND_TO_FILE => ToolName::NotesAppendToFile,
            args::NOTES_WRITE_FILE => ToolName::NotesWriteFile,
            args::NEW_CONTEXT => ToolName::NewContext,
            args::CONTEXT_HANDOFF => ToolName::ContextHandoff,
            args::GET_CONTEXT_REMAINING => ToolName::GetContextRemaining,
            args::MEMORY => ToolName::Memory,
            other => ToolName::Other(other),
        }
    }

    /// One of the four history tools (they read the whole history).
    pub fn is_history(self) -> bool {
        matches!(
            self,
            ToolName::HistoryListWindows
                | ToolName::HistoryListItems
                | ToolName::HistoryReadItem
                | ToolName::HistorySearchContents
        )
    }

    /// One of the five notes tools.
    pub fn is_notes(self) -> bool {
        matches!(
            self,
            ToolName::NotesListFilesByPrefix
                | ToolName::NotesReadFile
                | ToolName::NotesSearchContents
                | ToolName::NotesAppendToFile
                | ToolName::NotesWriteFile
        )
    }
}

#[cfg(test)]
mod tests {
    use super::ToolName;
    use crate::engine::tool_specs;

    #[test]
    fn every_registered_tool_is_a_case_of_its_own_and_an_unknown_one_is_other() {
        for spec in tool_specs() {
            let name = ToolName::of(spec.name);
            assert!(
                !matches!(name, ToolName::Other(_)),
                "{} has no case",
                spec.name
            );
            assert_eq!(name.is_history(), spec.name.starts_with("history_"));
            assert_eq!(name.is_notes(), spec.name.starts_with("notes_"));
        }
        assert_eq!(ToolName::of("bash"), ToolName::Bash);
        assert_eq!(ToolName::of("Bash"), ToolName::Other("Bash"));
        assert_eq!(
            ToolName::of("notes_delete"),
            ToolName::Other("notes_delete")
        );
        assert!(!ToolName::of("notes_delete").is_notes());
    }
}
