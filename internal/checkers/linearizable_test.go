package checkers

import "testing"

func TestDescribe(t *testing.T) {
	tab := newListTable()
	from, to := tab.appended(seq(5), 17)
	_, short := tab.appended([]int64{4}, 5)
	m := tab.model()
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"empty state", m.DescribeState([]any{0}), "{[]}"},
		{"long list", tab.lists[from].describe(), "[..4 elements.., 5]"},
		{"appended", tab.lists[to].describe(), "[..5 elements.., 17]"},
		{"short list", tab.lists[short].describe(), "[4, 5]"},
		{"append", m.DescribeOperation(listInput{kind: stepAppend, from: from, to: to, element: 17}, nil), "append 17 to [..4 elements.., 5]"},
		{"maybe", m.DescribeOperation(listInput{kind: stepMaybe, from: 0, to: to, element: 3, inferred: true}, nil), "maybe append 3 to [] (info, read inferred)"},
		{"read", m.DescribeOperation(listInput{kind: stepRead, from: short}, nil), "final read [4, 5]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}
