// The GitHub GraphQL documents: branch search and the suggested-task queries (the fields the
// reference reads, nothing more).
export const BRANCH_SEARCH = `query SearchBranches($owner: String!, $name: String!, $query: String!, $perPage: Int!) {
  repository(owner: $owner, name: $name) {
    refs(refPrefix: "refs/heads/", query: $query, first: $perPage, orderBy: { field: ALPHABETICAL, direction: ASC }) {
      nodes { name target { __typename ... on Commit { oid committedDate } } }
    }
  }
}`;

export const OPEN_PULL_REQUESTS = `query OpenPullRequests($login: String!) {
  user(login: $login) {
    pullRequests(first: 50, states: [OPEN], orderBy: { field: UPDATED_AT, direction: DESC }) {
      nodes {
        number
        title
        repository { nameWithOwner }
        mergeable
        commits(last: 1) { nodes { commit { statusCheckRollup { state } } } }
        reviews(first: 50, states: [CHANGES_REQUESTED, COMMENTED]) { nodes { state } }
      }
    }
  }
}`;

export const OPEN_ISSUES = `query AssignedIssues($login: String!) {
  user(login: $login) {
    issues(first: 50, states: [OPEN], filterBy: { assignee: $login }, orderBy: { field: UPDATED_AT, direction: DESC }) {
      nodes { number title repository { nameWithOwner } }
    }
  }
}`;
